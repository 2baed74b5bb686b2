int fold(int (*f)(int, int), int init, int n) {
    int acc = init;
    for (int i = 1; i <= n; i++) acc = f(acc, i);
    return acc;
}
