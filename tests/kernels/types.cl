// c = a + b for one scalar or vector type, chosen with -DT=...
__kernel void add(__global const T *a, __global const T *b, __global T *c) {
    size_t i = get_global_id(0);
    c[i] = a[i] + b[i];
}
