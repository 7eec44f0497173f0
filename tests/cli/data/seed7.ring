# small.members's first two members with seed 7: keys land elsewhere, so
# chring diff refuses to compare it with small.members.
%%ring-file 1
%%placement native
%%seed 7

cache-a 1 eu-west-1a
cache-b 2 eu-west-1b
