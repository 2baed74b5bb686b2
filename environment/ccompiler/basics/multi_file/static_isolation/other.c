static int hidden = 100;
int other_hidden(void) { return hidden; }
