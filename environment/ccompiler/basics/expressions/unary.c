// expect: exit=5
int main(void) {
    int a = 5;
    return -(-a) + ~0 + !0 - !a;
}
