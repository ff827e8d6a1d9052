#include <cstdio>
int main() { std::puts("aphrodited 0.1.0"); return 0; }
