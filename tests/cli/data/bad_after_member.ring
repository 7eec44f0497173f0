a 1
%%seed 3
