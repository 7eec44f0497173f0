%%ring-file 1
%%colour blue
a 1
