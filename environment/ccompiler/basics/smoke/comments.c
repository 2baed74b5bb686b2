// expect: exit=5
/* a block comment
   over two lines */
int main(void) {
    // a line comment
    int a = 5; /* trailing */
    return a; // done
}
