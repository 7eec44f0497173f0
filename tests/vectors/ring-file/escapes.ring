%%ring-file 1
%%placement native
%%hasher xxh3
%%seed 0
%%tokens-per-weight 160
%%fingerprint 0x2ea59c1f9df7b7bc
%00%01 1
%23hash 1 %23zone
café 1
percent%25 1
with%20space 2 z%20one
%FFbinary 1
