// Control-flow shapes, each computing out[gid] from in[] and gid; built
// optimised and with -cl-opt-disable, checked against the host.
int helper(int x) {
    if (x < 0)
        return -x;
    if (x > 100)
        return 100;
    return x * 2;
}

__kernel void early_return(__global const int *in, __global int *out, int n) {
    int g = get_global_id(0);
    if (g >= n)
        return;
    out[g] = in[g] + 1;
}

__kernel void break_continue(__global const int *in, __global int *out) {
    int g = get_global_id(0), s = 0;
    for (int i = 0; i < 32; i++) {
        int v = in[(g + i) % 64];
        if (v % 7 == 0)
            continue;
        if (v > 900)
            break;
        s += v;
    }
    out[g] = s;
}

__kernel void nested_break(__global const int *in, __global int *out) {
    int g = get_global_id(0), s = 0;
    for (int i = 0; i < 8; i++) {
        for (int j = 0; j < 8; j++) {
            int v = in[(g + i * 8 + j) % 64];
            if (v > 950)
                goto done;
            if (v % 5 == 0)
                break;
            s += v ^ j;
        }
    }
done:
    out[g] = s;
}

__kernel void switch_fallthrough(__global const int *in, __global int *out) {
    int g = get_global_id(0), s = 0;
    switch (in[g] % 6) {
    case 0:
        s += 1;
    case 1:
        s += 10;
        break;
    case 2:
    case 3:
        s += 100;
        break;
    default:
        s = -1;
    }
    out[g] = s;
}

__kernel void return_in_loop(__global const int *in, __global int *out) {
    int g = get_global_id(0);
    out[g] = -1;
    for (int i = 0; i < 64; i++) {
        if (in[(g + i) % 64] == g % 17) {
            out[g] = i;
            return;
        }
    }
}

__kernel void do_while_and_or(__global const int *in, __global int *out) {
    int g = get_global_id(0), i = 0, s = 0;
    do {
        s += in[(g + i) % 64];
        i++;
    } while ((i < 10 && s < 2000) || (i < 3));
    while (s > 100 && (s & 1) || s > 5000)
        s /= 2;
    out[g] = s + i;
}

__kernel void helper_twice(__global const int *in, __global int *out) {
    int g = get_global_id(0), s = 0;
    for (int i = 0; i < 4; i++)
        s += helper(in[(g + i) % 64] - 50) + helper(in[(g * 3 + i) % 64] + 20);
    out[g] = s;
}

__kernel void while_and_or(__global const int *in, __global int *out) {
    int g = get_global_id(0), s = in[g];
    while (s > 100 && (s & 1) || s > 5000)
        s /= 2;
    out[g] = s;
}
