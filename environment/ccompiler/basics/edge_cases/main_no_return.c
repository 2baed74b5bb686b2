// expect: exit=0
int main(void) {
    int unused = 3;
    (void)unused;
}
