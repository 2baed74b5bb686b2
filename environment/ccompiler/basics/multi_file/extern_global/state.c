int shared = 1;
void set_shared(int v) { shared = v; }
