%%ring-file 1
%%placement native
%%hasher xxh3
%%seed 0
%%tokens-per-weight 160
%%revision 3
%%fingerprint 0x35666e2dbd6f5a18
cache-a 1 eu-west-1a
cache-b 2 eu-west-1b
cache-c 1 eu-west-1c
cache-d 0
cache-e 1 eu-west-1a
