// expect: exit=10
int main(void) {
    int i = 0;
again:
    i++;
    if (i < 10) goto again;
    return i;
}
