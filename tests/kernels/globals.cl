// Program-scope variables: initialised data of many types, pointers
// between variables, state kept from one enqueue (and one kernel) to the
// next, and function-scope static variables.

typedef struct {
    char c;
    long l;
    float3 v;
    short s[3];
    global int *p;
} Mixed;

global int counter;
global int table[5] = {10, 20, 30, 40, 50};
global char letters[6] = "vkcl!";
global long big = -1234567890123L;
global float f = 2.5f;
global float3 v3 = (float3)(1.0f, 2.0f, 3.0f);
global uchar16 bytes16 = (uchar16)(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
global Mixed mixed = {'m', 1L << 40, (float3)(4.0f, 5.0f, 6.0f), {7, 8, 9}, &table[3]};
global int *global middle = &table[2];
global int *global nowhere;
constant int squares[8] = {0, 1, 4, 9, 16, 25, 36, 49};
constant int *constant square_ptr = &squares[3];

kernel void read_all(global long *out) {
    int i = 0;
    for (int k = 0; k < 5; k++) out[i++] = table[k];
    for (int k = 0; k < 6; k++) out[i++] = letters[k];
    out[i++] = big;
    out[i++] = (long)(f * 4.0f);
    out[i++] = (long)(v3.x + 10.0f * v3.y + 100.0f * v3.z);
    out[i++] = bytes16.s0 + bytes16.sf;
    out[i++] = mixed.c;
    out[i++] = mixed.l;
    out[i++] = (long)(mixed.v.x * mixed.v.y * mixed.v.z);
    out[i++] = mixed.s[0] + mixed.s[1] * 10 + mixed.s[2] * 100;
    out[i++] = *mixed.p;
    out[i++] = *middle;
    out[i++] = nowhere == 0;
    out[i++] = middle[1];
    out[i++] = *square_ptr;
    out[i++] = counter;
}

// Each work-item looks a value up in a table chosen at run time.
kernel void lookup(global const int *index, global int *out) {
    size_t g = get_global_id(0);
    out[g] = squares[index[g] & 7] + table[index[g] % 5];
}

kernel void bump(int by) {
    atomic_add(&counter, by);
    if (get_global_id(0) == 0) table[0] += 1;
}

kernel void read_counter(global int *out) {
    out[0] = counter;
    out[1] = table[0];
}

// A pointer variable moved by one kernel and followed by another.
kernel void advance(void) {
    middle += 1;
}

kernel void follow(global int *out) {
    out[0] = *middle;
    out[1] = middle - &table[0];
}

int next_ticket(void) {
    static global int ticket = 100;
    return atomic_inc(&ticket);
}

kernel void tickets(global int *out) {
    out[get_global_id(0)] = next_ticket();
}
