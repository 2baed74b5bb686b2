// expect: exit=8
int main(void) {
    int x = 10;
    x += 5; x -= 3; x *= 2; x /= 4; x %= 7; x <<= 2; x >>= 1; x |= 1; x &= 7; x ^= 3;
    return x + 2;
}
