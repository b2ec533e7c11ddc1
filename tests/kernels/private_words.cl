// A private struct reached in ways Vulkan's logical pointers cannot follow,
// as optimised code reaches its objects: a byte view of a word array, a
// pointer walking the words (a phi of pointers), a choice between two
// pointers into it, a step from one member into the next (C's objects are
// flat), float and vector views of its words. It stays private, as words,
// instead of moving to scratch memory (the rewriter's unit test checks that).
typedef struct {
    uint len;
    uint w[8];
    ushort tail[3];
    ulong big;
} rec;

kernel void private_words(global const uint *in, global uint *out) {
    size_t g = get_global_id(0);
    uint x = in[g];
    rec r;
    r.len = x & 31;
    for (int i = 0; i < 8; i++) r.w[i] = x * (i + 1) + 0x01020304u * i;
    r.tail[0] = (ushort)x;
    r.tail[1] = (ushort)(x >> 3);
    r.tail[2] = 7;
    r.big = ((ulong)x << 33) | 5;
    uchar *b = (uchar *)r.w;
    for (uint i = 0, j = 31; i < j; i++, j--) {
        uchar t = b[i];
        b[i] = b[j];
        b[j] = t;
    }
    b[x & 31] ^= 0x5a;
    float *f = (float *)&r.w[3];
    *f = (float)(x & 0xffff) * 0.5f;
    uint acc = 0;
    for (uint *p = r.w; p != r.w + 8; p++) acc = acc * 31 + *p;
    uint *q = (x & 2) ? &r.w[1] : &r.w[6];
    acc += *q;
    ushort *t = (ushort *)(r.w + 8);
    acc += t[0] + t[1] + t[2];
    acc += (uint)(r.big >> 32) + (uint)r.big;
    uchar *s = b + (x & 7);
    while (s != b + 32 && *s != 0x33) s++;
    acc += (uint)(s - b);
    uint2 v = *(uint2 *)&r.w[1];
    acc += v.x ^ v.y;
    out[g] = acc + r.len;
}
