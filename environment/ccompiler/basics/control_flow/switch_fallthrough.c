// expect: exit=7
int main(void) {
    int r = 0;
    switch (2) {
    case 1: r += 1;
    case 2: r += 2;
    case 3: r += 4; break;
    case 4: r += 8;
    }
    return r + 1;
}
