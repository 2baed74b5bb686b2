// expect: exit=42
extern int shared;
void set_shared(int v);
int main(void) {
    set_shared(40);
    return shared + 2;
}
