# A ring file with option directives (docs/ring-file.md): they set the options.
%%ring-file 1
%%placement native
%%seed 7
%%tokens-per-weight 40

alpha 1
beta 2 zone-b   # twice alpha's share
gamma 0
