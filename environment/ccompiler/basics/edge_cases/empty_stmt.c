// expect: exit=3
int main(void) {
    int i = 0;
    ;;
    for (; i < 3; i++) ;
    { }
    return i;
}
