%%ring-file 1
%%placement native
%%hasher xxh3
%%seed 0
%%tokens-per-weight 160
%%fingerprint 0xe49da510bcb36b02
%00%01 1
%23hash 1 %23zone
café 1
percent%25 1
with%20space 2 z%20one
%FFbinary 1
