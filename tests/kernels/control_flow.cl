// Control-flow shapes the structurizer must handle. Every kernel takes
// (in, out, n) and writes out[i] from in[i] (and, for some, other inputs).

kernel void early_return(global const int *in, global int *out, int n) {
    int i = get_global_id(0);
    int x = in[i];
    out[i] = -1;
    if (x < 0)
        return;
    if (x % 3 == 0) {
        out[i] = 3;
        return;
    }
    out[i] = x * 2;
}

static int classify(int x) {
    if (x < 0)
        return -x;
    if (x > 10)
        return 10;
    if (x == 5)
        return 50;
    return x + 1;
}

kernel void helper_early_return(global const int *in, global int *out, int n) {
    int i = get_global_id(0);
    out[i] = classify(in[i]) + 3 * classify(in[i] - 5);
}

kernel void break_continue(global const int *in, global int *out, int n) {
    int i = get_global_id(0);
    int x = in[i];
    int s = 0;
    for (int j = 0; j < (x & 15) + 4; j++) {
        if (j % 3 == 0)
            continue;
        if (j * x > 50)
            break;
        s += j;
        if (s == 7) {
            s += 100;
            continue;
        }
        s += 1;
    }
    out[i] = s;
}

kernel void nested_break(global const int *in, global int *out, int n) {
    int i = get_global_id(0);
    int x = in[i];
    int found = -1;
    for (int a = 0; a < 8; a++) {
        for (int b = 0; b < 8; b++) {
            if (a * b + a == x) {
                found = a * 8 + b;
                goto done;
            }
            if (b > a + 3)
                break;
        }
    }
done:
    out[i] = found;
}

kernel void nested_break_flag(global const int *in, global int *out, int n) {
    int i = get_global_id(0);
    int x = in[i];
    int s = 0;
    bool stop = false;
    for (int a = 0; a < 6 && !stop; a++) {
        for (int b = 0; b < 6; b++) {
            s += a ^ b;
            if (s > x) {
                stop = true;
                break;
            }
            if ((a + b) % 4 == 3)
                continue;
            s += 1;
        }
    }
    out[i] = s;
}

kernel void switch_fallthrough(global const int *in, global int *out, int n) {
    int i = get_global_id(0);
    int x = in[i];
    int s = 0;
    switch (x % 7) {
    case 0:
        s += 1;
    case 1:
        s += 2;
        break;
    case 2:
    case 3:
        s += 10;
        break;
    case 5:
        s += 100;
    default:
        s += 1000;
    }
    out[i] = s;
}

kernel void return_in_loop(global const int *in, global int *out, int n) {
    int i = get_global_id(0);
    int x = in[i];
    for (int j = 1; j < 20; j++) {
        if (in[(i + j) % n] == x + 1) {
            out[i] = j;
            return;
        }
        if (in[(i + j) % n] == x - 1)
            return;
    }
    out[i] = -1;
}

kernel void do_while(global const int *in, global int *out, int n) {
    int i = get_global_id(0);
    int x = in[i] + 100;
    int c = 0;
    do {
        x = x / 2 + (x & 1);
        c++;
    } while (x > 1 && c < 50);
    out[i] = c * 1000 + x;
}

kernel void and_or_condition(global const int *in, global int *out, int n) {
    int i = get_global_id(0);
    int x = in[i];
    int s = 0;
    int j = 0;
    while ((j < 10 && s < 100) || j < 3) {
        s += x + j;
        j++;
    }
    out[i] = s * 100 + j;
}

static int step(int v) {
    if (v & 1)
        return 3 * v + 1;
    return v / 2;
}

kernel void helper_twice_in_loop(global const int *in, global int *out, int n) {
    int i = get_global_id(0);
    int v = in[i] + 50;
    for (int k = 0; k < 12; k++) {
        if (k & 1)
            v = step(v);
        else
            v = step(v + k);
    }
    out[i] = v;
}

// The OpenCL-CTS shape: a kernel calling another kernel function.
kernel void test_kernel_to_call(global int *output, global const int *input, int where) {
    int b;
    if (where == 0)
        output[get_global_id(0)] = 0;
    for (b = 0; b < where; b++)
        output[get_global_id(0)] += input[b];
}

kernel void kernel_call_kernel_function(global const int *in, global int *out, int n) {
    int tid = get_global_id(0);
    int a;
    out[tid] = 1;
    for (a = 0; a < 3; a++)
        out[tid] = out[tid] * in[tid];
    for (a = 0; a < 2; a++)
        test_kernel_to_call(out, in, tid % 8);
}

kernel void switch_in_loop(global const int *in, global int *out, int n) {
    int i = get_global_id(0);
    int x = in[i];
    int s = 0;
    for (int j = 0; j < 16; j++) {
        switch ((x + j) % 5) {
        case 0:
            s += 1;
            continue;
        case 1:
            s *= 2;
        case 2:
            s += 3;
            break;
        case -3:
            if (s > 40)
                goto out;
            s -= 1;
            break;
        default:
            s ^= j;
        }
        s += 1;
    }
out:
    out[i] = s;
}

kernel void return_from_three_loops(global const int *in, global int *out, int n) {
    int i = get_global_id(0);
    int x = in[i];
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 4; c++) {
                if (a * 16 + b * 4 + c == x + 20) {
                    out[i] = a * 100 + b * 10 + c;
                    return;
                }
                if (c > b)
                    break;
                if (b > a + 1)
                    goto next_a;
            }
next_a:
    out[i] = -x;
}

kernel void uniform_barrier_loop(global const int *in, global int *out, int n) {
    local int tile[32];
    int i = get_global_id(0);
    int l = get_local_id(0);
    int s = 0;
    for (int k = 0; k < 4; k++) {
        tile[l] = in[(i + k) % n];
        barrier(CLK_LOCAL_MEM_FENCE);
        if (k == 2) {
            barrier(CLK_LOCAL_MEM_FENCE);
            continue;
        }
        s += tile[(l + 1) % 32];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    out[i] = s;
}

kernel void infinite_loop_with_exits(global const int *in, global int *out, int n) {
    int i = get_global_id(0);
    int x = in[i];
    int j = 0;
    while (1) {
        j++;
        if (j * j > x + 30)
            break;
        if (j == 3 && x > 10) {
            out[i] = 1000 + x;
            return;
        }
    }
    out[i] = j;
}

/* A loop that, once the compiler has hoisted the invariant load, either
 * leaves at once or never: the shape of a search whose stride is a macro
 * an application sets to 0 for a problem size it never launches. */
#define STRIDE 0
kernel void leaves_at_once_or_never(global const int *in, global int *out, int n) {
    for (int i = get_global_id(0); i < n; i += get_global_size(0)) {
        int s = 0;
        for (int k = 0;; k++) {
            int v = in[i + k * STRIDE];
            if (v >= -5)
                break;
            s += in[v];
        }
        out[i] = in[i] * 2 + s;
    }
}

kernel void backward_gotos(global const int *in, global int *out, int n) {
    int i = get_global_id(0);
    int x = in[i], s = 0;
again:
    s += x;
    if (s < 0) {
        x += 3;
        goto again;
    }
    if (s > 100)
        goto big;
    if ((s & 3) == 1) {
        s += 7;
        goto again2;
    }
    s *= 2;
again2:
    if (s < 50) {
        s += 11;
        goto again;
    }
big:
    out[i] = s;
}

// A jump into a loop: irreducible unless the optimiser copies code.
kernel void jump_into_loop(global const int *in, global int *out, int n) {
    int i = get_global_id(0);
    int x = in[i] & 7, s = 0;
    if (in[i] & 8)
        goto inside;
    while (s < 100) {
        s += 3;
    inside:
        s += x;
        if (s == 42)
            break;
    }
    out[i] = s;
}

// Several cases reaching the same block, whose phi then has one entry per
// case edge of the switch.
kernel void switch_shared_targets(global const int *in, global int *out, int n) {
    int i = get_global_id(0);
    int x = in[i];
    int y;
    switch (x) {
    case 1:
    case 2:
    case 9:
        y = 5;
        break;
    case 3:
        y = x * 7;
        break;
    case -4:
        y = -1;
        break;
    default:
        y = 0;
    }
    out[i] = y + x;
}

// Many early returns nested in a row, with loops between them: every
// return's branch needs a merge of its own.
#define STEP(k)                                                               \
    if ((x + k) % 7 == 3) {                                                   \
        s += k;                                                               \
        if (s > k * 4 + 5) {                                                  \
            out[i] = s;                                                       \
            return;                                                           \
        }                                                                     \
    } else if ((x ^ k) & 4)                                                   \
        s -= 1;
#define LOOP(k)                                                               \
    for (int j = 0; j < (x & 3); j++) {                                       \
        if (j == k % 3)                                                       \
            continue;                                                         \
        s += j;                                                               \
        if (s == k)                                                           \
            break;                                                            \
    }

kernel void many_early_returns(global const int *in, global int *out, int n) {
    int i = get_global_id(0);
    int x = in[i], s = 0;
    STEP(0) STEP(1) LOOP(1) STEP(2) STEP(3) STEP(4) LOOP(4) STEP(5) STEP(6)
    STEP(7) LOOP(7) STEP(8) STEP(9) STEP(10) LOOP(10) STEP(11) STEP(12)
    out[i] = s;
}
