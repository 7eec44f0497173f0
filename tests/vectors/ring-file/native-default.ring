%%ring-file 1
%%placement native
%%hasher xxh3
%%seed 0
%%tokens-per-weight 160
%%fingerprint 0x11462d199d1d39f1
cache-a 1 eu-west-1a
cache-b 2 eu-west-1b
cache-c 1 eu-west-1c
draining 0 eu-west-1a
