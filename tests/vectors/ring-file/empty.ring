%%ring-file 1
%%placement native
%%hasher xxh3
%%seed 0
%%tokens-per-weight 160
%%fingerprint 0x14ea2b2cb5e4d9f4
