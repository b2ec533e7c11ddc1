// printf from many work-items: each prints one line the host can check.
__kernel void lines(__global const float *a) {
    int i = get_global_id(0);
    printf("line %03d: %.2f %s %v4hd %x %c %5.1e %u\n", i, a[i], "text", (short4)(i, -i, 2, 3),
           (uint)i * 17u, 'a' + i % 26, a[i] * 1000.0f, (uint)(i * 3));
    if (i == 0) {
        // Length modifiers narrow their argument; %p prints an address.
        printf("narrow %hx %hhx %hhd %p\n", -32767, -128, 200, a);
    }
}
