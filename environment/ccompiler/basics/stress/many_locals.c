// expect: exit=210
int main(void) {
    int a1 = 1, a2 = 2, a3 = 3, a4 = 4, a5 = 5, a6 = 6, a7 = 7, a8 = 8, a9 = 9, a10 = 10;
    int b1 = 11, b2 = 12, b3 = 13, b4 = 14, b5 = 15, b6 = 16, b7 = 17, b8 = 18, b9 = 19, b10 = 20;
    return a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10
         + b1 + b2 + b3 + b4 + b5 + b6 + b7 + b8 + b9 + b10;
}
