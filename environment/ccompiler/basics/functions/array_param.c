// expect: exit=20
int total(int *a, int n) {
    int s = 0;
    for (int i = 0; i < n; i++) s += a[i];
    return s;
}
int main(void) {
    int v[4] = {2, 4, 6, 8};
    return total(v, 4);
}
