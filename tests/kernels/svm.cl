// Shared virtual memory: structures linked by pointers the host wrote.

typedef struct Node {
    int value;
    global struct Node *next;
} Node;

// Walks the list from `head`, doubling each value, and stores the sum of
// the values it saw.
kernel void walk(global Node *head, global int *sum) {
    int total = 0;
    for (global Node *n = head; n; n = n->next) {
        total += n->value;
        n->value *= 2;
    }
    *sum = total;
}

kernel void add_one(global int *data) {
    data[get_global_id(0)] += 1;
}

kernel void scale(global int *data, int by) {
    data[get_global_id(0)] *= by;
}
