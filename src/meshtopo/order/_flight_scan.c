/* A Flight Recorder dump's pickle read into columns without building its objects
 * (order/_flight_columns.py says what the columns are).
 *
 * scan(data, fields, library, max_depth) walks the pickle's opcodes once into a compact
 * tree: every value a node of 16 bytes (strings point into data), every container's items in
 * blocks of node indexes. A first pass over the opcodes counts the nodes, items, blocks and
 * memo slots the walk can need, so each array is allocated once at that size (no doubling:
 * about 3 bytes of tree per byte of a torch dump). It then reads the top dict's "entries", "pg_config" and "pg_status" and, of
 * each entry, the values of `fields` and of its first frame whose filename does not hold
 * `library`, giving each distinct value an id on first sight (an entry's fields in order, a
 * list's or tuple's items before it). It returns (values, ids as int32 bytes, pg_config,
 * pg_status) with only those values built as Python objects, or None to decline: for any
 * opcode beyond the plain values of protocols 2 to 5 (dicts, lists, tuples, strings, ints
 * within int64, floats, booleans, None, the memo, marks and frames), for anything Python's
 * unpickler would refuse, and for any dump whose columns it does not give exactly as
 * _flight_columns.columns does. The caller then reads the dump with Python's unpickler.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { T_NONE, T_TRUE, T_FALSE, T_INT, T_FLOAT, T_STR, T_LIST, T_TUPLE, T_DICT };
enum { FRAME_UNKNOWN, FRAME_USER, FRAME_LIBRARY };

typedef struct {
    uint8_t type;
    uint8_t hashable : 1;
    uint8_t frame : 2;  /* a dict's verdict as a frame (FRAME_*) */
    int8_t field;       /* a string's index among the fields (-1 none, -2 not yet known) */
    uint8_t height;     /* lists and tuples nested in an interned value, itself included */
    int32_t id;         /* the value's id, -1 until given */
    union {
        int64_t value;  /* an int's value, a float's bits */
        struct {
            int32_t a;  /* a string's offset, a container's first block (-1: none) */
            int32_t b;  /* a string's length, a container's last block */
        };
    };
} Node;

typedef struct {
    int32_t start;  /* into kids */
    int32_t count;
    int32_t next;   /* the container's next block, -1 at the end */
} Block;

typedef struct {
    const unsigned char *data;
    Py_ssize_t size;
    Node *nodes;
    Py_ssize_t n_nodes, cap_nodes;
    int32_t *kids;
    Py_ssize_t n_kids, cap_kids;
    Block *blocks;
    Py_ssize_t n_blocks, cap_blocks;
    int32_t *stack;
    Py_ssize_t sp, cap_stack;
    Py_ssize_t *marks;
    Py_ssize_t n_marks, cap_marks;
    int32_t *memo;
    Py_ssize_t cap_memo, memo_len;
    /* interning */
    PyObject *values, *strs, *ints, *floats, *lists, *tuples;
    int32_t fixed[3];
    int max_depth;
    Py_ssize_t n_fields;
    const char **field_names;
    Py_ssize_t *field_sizes;
    const char *library;
    Py_ssize_t library_size;
} Scan;

#define GROW(ptr, n, cap, type)                                                  \
    do {                                                                         \
        if ((n) >= (cap)) {                                                      \
            Py_ssize_t c_ = (cap) ? 2 * (cap) : 256;                             \
            type *p_ = PyMem_Realloc((ptr), (size_t)c_ * sizeof(type));          \
            if (!p_) return -2;                                                  \
            (ptr) = p_;                                                          \
            (cap) = c_;                                                          \
        }                                                                        \
    } while (0)

/* Results of the helpers: 0 ok, -1 decline, -2 a Python error is set (memory). */

static int new_node(Scan *s, int type, int64_t a, int64_t b) {
    if (s->n_nodes >= s->cap_nodes) return -1;  /* beyond what size() counted */
    Node *n = &s->nodes[s->n_nodes];
    n->type = (uint8_t)type;
    n->hashable = type != T_LIST && type != T_DICT;
    n->frame = FRAME_UNKNOWN;
    n->field = -2;
    n->id = -1;
    n->height = 0;
    if (type == T_INT || type == T_FLOAT) {
        n->value = a;
    } else {
        n->a = (int32_t)a;
        n->b = (int32_t)b;
    }
    GROW(s->stack, s->sp, s->cap_stack, int32_t);
    s->stack[s->sp++] = (int32_t)s->n_nodes++;
    return 0;
}

static int push(Scan *s, int32_t node) {
    GROW(s->stack, s->sp, s->cap_stack, int32_t);
    s->stack[s->sp++] = node;
    return 0;
}

static Py_ssize_t fence(Scan *s) { return s->n_marks ? s->marks[s->n_marks - 1] : 0; }

/* Add stack[from:sp] to container `node` as one block. */
static int add_block(Scan *s, int32_t node, Py_ssize_t from) {
    Py_ssize_t count = s->sp - from;
    if (count == 0) return 0;
    if (s->n_kids + count > s->cap_kids || s->n_blocks >= s->cap_blocks) return -1;
    Block *b = &s->blocks[s->n_blocks];
    b->start = (int32_t)s->n_kids;
    b->count = (int32_t)count;
    b->next = -1;
    memcpy(s->kids + s->n_kids, s->stack + from, (size_t)count * sizeof(int32_t));
    s->n_kids += count;
    Node *n = &s->nodes[node];
    if (n->a < 0) n->a = (int32_t)s->n_blocks;
    else s->blocks[n->b].next = (int32_t)s->n_blocks;
    n->b = (int32_t)s->n_blocks++;
    s->sp = from;
    return 0;
}

static int new_container(Scan *s, int type, Py_ssize_t from) {
    /* stack[from:] become the items of a new container pushed in their place */
    Py_ssize_t count = s->sp - from;
    int r = new_node(s, type, -1, -1);
    if (r) return r;
    int32_t node = s->stack[--s->sp];
    int hashable = 1;
    for (Py_ssize_t i = from; i < from + count; i++)
        hashable &= s->nodes[s->stack[i]].hashable;
    if ((r = add_block(s, node, from))) return r;
    if (type == T_TUPLE) s->nodes[node].hashable = (uint8_t)hashable;
    return push(s, node);
}

static int memo_put(Scan *s, Py_ssize_t idx) {
    if (s->sp <= fence(s) || idx < 0 || idx >= s->cap_memo) return -1;
    if (s->memo[idx] < 0) s->memo_len++;
    s->memo[idx] = s->stack[s->sp - 1];
    return 0;
}

static int memo_get(Scan *s, Py_ssize_t idx) {
    if (idx < 0 || idx >= s->cap_memo || s->memo[idx] < 0) return -1;
    return push(s, s->memo[idx]);
}

static int string(Scan *s, const unsigned char *p, uint64_t len) {
    for (uint64_t i = 0; i < len; i++) {
        if (p[i] & 0x80) {
            PyObject *text = PyUnicode_DecodeUTF8((const char *)p, (Py_ssize_t)len,
                                                  "surrogatepass");
            if (!text) {
                PyErr_Clear();
                return -1;
            }
            Py_DECREF(text);
            break;
        }
    }
    return new_node(s, T_STR, p - s->data, (int64_t)len);
}

static uint64_t le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static int long_int(Scan *s, const unsigned char *p, uint64_t n) {
    if (n > 8) return -1;
    if (n == 0) return new_node(s, T_INT, 0, 0);
    uint64_t v = le(p, (int)n);
    if (n < 8 && (p[n - 1] & 0x80)) v |= ~(uint64_t)0 << (8 * n);
    return new_node(s, T_INT, (int64_t)v, 0);
}

/* The operand of opcode `op` whose bytes start at `p`: its number (a count, an index, a
 * length) in *arg and where its payload starts in *payload (strings and longs: `*arg` bytes
 * of it). Returns where the next opcode starts, or NULL when the data ends first. */
static const unsigned char *operand(unsigned char op, const unsigned char *p,
                                    const unsigned char *end, uint64_t *arg,
                                    const unsigned char **payload) {
    int width = 0;   /* bytes of the little-endian number */
    int sized = 0;   /* whether that number is the length of a payload that follows */
    switch (op) {
    case 0x80: case 'K': case 'q': case 'h': width = 1; break;
    case 'M': width = 2; break;
    case 'J': case 'r': case 'j': width = 4; break;
    case 0x95: width = 8; break;
    case 'G': width = 8; break;
    case 0x8a: case 0x8c: width = 1; sized = 1; break;
    case 'X': case 0x8b: width = 4; sized = 1; break;
    case 0x8d: width = 8; sized = 1; break;
    default: break;
    }
    if (end - p < width) return NULL;
    *arg = width == 8 && op == 'G' ? 0 : le(p, width);
    *payload = p;
    p += width;
    if (op == 0x8b && (int32_t)(uint32_t)*arg < 0) return NULL;
    if (sized || op == 0x95) {
        if (*arg > (uint64_t)(end - p)) return NULL;
        *payload = p;
        if (sized) p += *arg;
    }
    return p;
}

/* How many nodes, kids, blocks and memo slots walk() can need: each array is allocated once
 * at its size (a node per value opcode, a kid per push, a block per opcode that fills a
 * container). 0, or -1 when the data is too large for int32 indexes. */
static int size(Scan *s) {
    const unsigned char *p = s->data, *end = s->data + s->size;
    Py_ssize_t nodes = 3, pushes = 0, blocks = 0, memo = 0, puts = 0;
    if (s->size >= INT32_MAX) return -1;
    while (p < end) {
        unsigned char op = *p++;
        uint64_t arg = 0;
        const unsigned char *payload;
        p = operand(op, p, end, &arg, &payload);
        if (!p || op == '.') break;
        switch (op) {
        case '}': case ']': case ')': case 'J': case 'K': case 'M': case 0x8a: case 0x8b:
        case 'G': case 'X': case 0x8c: case 0x8d:
            nodes++; pushes++; break;
        case 0x85: case 0x86: case 0x87: case 't': case 'l': case 'd':
            nodes++; pushes++; blocks++; break;
        case 'e': case 'u': case 'a': case 's': blocks++; break;
        case 'N': case 0x88: case 0x89: case 'h': case 'j': pushes++; break;
        case 'q': case 'r': if (arg <= (uint64_t)s->size && (Py_ssize_t)arg >= memo)
                      memo = (Py_ssize_t)arg + 1;
                  puts++; break;
        case 0x94: puts++; break;
        default: break;
        }
    }
    s->cap_nodes = nodes;
    s->cap_kids = pushes + 3;
    s->cap_blocks = blocks;
    s->cap_memo = memo > puts ? memo : puts;
    s->nodes = PyMem_Malloc((size_t)(s->cap_nodes ? s->cap_nodes : 1) * sizeof(Node));
    s->kids = PyMem_Malloc((size_t)s->cap_kids * sizeof(int32_t));
    s->blocks = PyMem_Malloc((size_t)(s->cap_blocks ? s->cap_blocks : 1) * sizeof(Block));
    s->memo = PyMem_Malloc((size_t)(s->cap_memo ? s->cap_memo : 1) * sizeof(int32_t));
    if (!s->nodes || !s->kids || !s->blocks || !s->memo) return -2;
    for (Py_ssize_t i = 0; i < s->cap_memo; i++) s->memo[i] = -1;
    return 0;
}

/* Walk the opcodes; the root's node index in *root. */
static int walk(Scan *s, int32_t *root) {
    const unsigned char *p = s->data, *end = s->data + s->size;
    int r = 0;
    while (p < end) {
        unsigned char op = *p++;
        uint64_t arg = 0;
        const unsigned char *payload;
        if (!(p = operand(op, p, end, &arg, &payload))) return -1;
        switch (op) {
        case 0x80: if (arg > 5) return -1; break;                         /* PROTO */
        case 0x95: break;                                                 /* FRAME */
        case '.':                                                         /* STOP */
            if (s->sp <= fence(s)) return -1;
            *root = s->stack[s->sp - 1];
            return 0;
        case '(':                                                         /* MARK */
            GROW(s->marks, s->n_marks, s->cap_marks, Py_ssize_t);
            s->marks[s->n_marks++] = s->sp;
            break;
        case '}': r = new_node(s, T_DICT, -1, -1); break;
        case ']': r = new_node(s, T_LIST, -1, -1); break;
        case ')': r = new_node(s, T_TUPLE, -1, -1); break;
        case 'N': r = push(s, 0); break;
        case 0x88: r = push(s, 1); break;
        case 0x89: r = push(s, 2); break;
        case 'J': r = new_node(s, T_INT, (int32_t)(uint32_t)arg, 0); break;
        case 'K': case 'M': r = new_node(s, T_INT, (int64_t)arg, 0); break;
        case 0x8a: case 0x8b: r = long_int(s, payload, arg); break;
        case 'G': { uint64_t v = 0;                                       /* big-endian */
                    for (int i = 0; i < 8; i++) v = (v << 8) | payload[i];
                    r = new_node(s, T_FLOAT, (int64_t)v, 0); break; }
        case 'X': case 0x8c: case 0x8d: r = string(s, payload, arg); break;
        case 'q': case 'r': r = memo_put(s, (Py_ssize_t)arg); break;
        case 0x94: r = memo_put(s, s->memo_len); break;
        case 'h': case 'j': r = memo_get(s, (Py_ssize_t)arg); break;
        case 0x85: case 0x86: case 0x87: {                                /* TUPLE1-3 */
            Py_ssize_t n = op - 0x84;
            if (s->sp - n < fence(s)) return -1;
            r = new_container(s, T_TUPLE, s->sp - n);
            break;
        }
        case 't': case 'l': case 'd': case 'e': case 'u': {             /* by mark */
            if (!s->n_marks) return -1;
            Py_ssize_t from = s->marks[--s->n_marks];
            if (op == 't' || op == 'l') {
                r = new_container(s, op == 't' ? T_TUPLE : T_LIST, from);
                break;
            }
            if (op == 'd') {
                if ((s->sp - from) % 2) return -1;
                for (Py_ssize_t i = from; i < s->sp; i += 2)
                    if (!s->nodes[s->stack[i]].hashable) return -1;
                r = new_container(s, T_DICT, from);
                break;
            }
            if (from <= fence(s)) return -1;
            int32_t target = s->stack[from - 1];
            if (op == 'e') {
                if (s->nodes[target].type != T_LIST) return -1;
            } else {
                if (s->nodes[target].type != T_DICT || (s->sp - from) % 2) return -1;
                for (Py_ssize_t i = from; i < s->sp; i += 2)
                    if (!s->nodes[s->stack[i]].hashable) return -1;
            }
            r = add_block(s, target, from);
            break;
        }
        case 'a': case 's': {                                             /* APPEND, SETITEM */
            Py_ssize_t from = s->sp - (op == 'a' ? 1 : 2);
            if (from <= fence(s)) return -1;
            int32_t target = s->stack[from - 1];
            if (s->nodes[target].type != (op == 'a' ? T_LIST : T_DICT)) return -1;
            if (op == 's' && !s->nodes[s->stack[from]].hashable) return -1;
            r = add_block(s, target, from);
            break;
        }
        default:
            return -1;
        }
        if (r) return r;
    }
    return -1;  /* no STOP: truncated */
}

/* ---- reading the tree ---- */

static int is_text(Scan *s, int32_t node, const char *text, Py_ssize_t size) {
    Node *n = &s->nodes[node];
    return n->type == T_STR && n->b == size && memcmp(s->data + n->a, text, (size_t)size) == 0;
}

/* The value of key `name` in dict `node` (the last one), or -1. */
static int32_t lookup(Scan *s, int32_t node, const char *name) {
    int32_t found = -1;
    Py_ssize_t size = (Py_ssize_t)strlen(name);
    for (int64_t b = s->nodes[node].a; b >= 0; b = s->blocks[b].next)
        for (int64_t i = 0; i < s->blocks[b].count; i += 2) {
            int32_t key = s->kids[s->blocks[b].start + i];
            if (is_text(s, key, name, size)) found = s->kids[s->blocks[b].start + i + 1];
        }
    return found;
}

static int intern(Scan *s, int32_t node, int depth, int32_t *out);

static int intern_key(Scan *s, PyObject *table, PyObject *key, PyObject *value, int32_t *out) {
    /* steals key and value */
    if (!key || !value) {
        Py_XDECREF(key);
        Py_XDECREF(value);
        return -2;
    }
    PyObject *found = PyDict_GetItemWithError(table, key);
    if (found) {
        *out = (int32_t)PyLong_AsLong(found);
        Py_DECREF(key);
        Py_DECREF(value);
        return 0;
    }
    if (PyErr_Occurred()) goto fail;
    Py_ssize_t id = PyList_GET_SIZE(s->values);
    PyObject *number = PyLong_FromSsize_t(id);
    if (!number || PyDict_SetItem(table, key, number) < 0 || PyList_Append(s->values, value) < 0) {
        Py_XDECREF(number);
        goto fail;
    }
    Py_DECREF(number);
    Py_DECREF(key);
    Py_DECREF(value);
    *out = (int32_t)id;
    return 0;
fail:
    Py_DECREF(key);
    Py_DECREF(value);
    return -2;
}

static int intern(Scan *s, int32_t node, int depth, int32_t *out) {
    Node *n = &s->nodes[node];
    if (n->id >= 0) {
        if (n->height && depth + n->height > s->max_depth) return -1;
        *out = n->id;
        return 0;
    }
    int height = 0;
    int r = 0;
    int32_t id = -1;
    switch (n->type) {
    case T_NONE: case T_TRUE: case T_FALSE: {
        int which = n->type - T_NONE;
        if (s->fixed[which] < 0) {
            PyObject *v = n->type == T_NONE ? Py_None : n->type == T_TRUE ? Py_True : Py_False;
            s->fixed[which] = (int32_t)PyList_GET_SIZE(s->values);
            if (PyList_Append(s->values, v) < 0) return -2;
        }
        id = s->fixed[which];
        break;
    }
    case T_INT: {
        PyObject *v = PyLong_FromLongLong(n->value);
        Py_XINCREF(v);
        r = intern_key(s, s->ints, v, v, &id);
        break;
    }
    case T_FLOAT: {
        double d;
        uint64_t bits = (uint64_t)n->value;
        memcpy(&d, &bits, 8);
        r = intern_key(s, s->floats, PyLong_FromUnsignedLongLong(bits), PyFloat_FromDouble(d),
                       &id);
        break;
    }
    case T_STR: {
        PyObject *v = PyUnicode_DecodeUTF8((const char *)s->data + n->a, (Py_ssize_t)n->b,
                                           "surrogatepass");
        Py_XINCREF(v);
        r = intern_key(s, s->strs, v, v, &id);
        break;
    }
    case T_LIST: case T_TUPLE: {
        /* keyed by its items' ids (as int32 bytes); the value is built only when new */
        if (depth == s->max_depth) return -1;
        Py_ssize_t count = 0;
        for (int64_t b = n->a; b >= 0; b = s->blocks[b].next) count += s->blocks[b].count;
        PyObject *key = PyBytes_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(int32_t));
        if (!key) return -2;
        int32_t *items = (int32_t *)PyBytes_AS_STRING(key);
        Py_ssize_t i = 0;
        for (int64_t b = n->a; b >= 0 && !r; b = s->blocks[b].next)
            for (int64_t k = 0; k < s->blocks[b].count && !r; k++, i++) {
                int32_t kid = s->kids[s->blocks[b].start + k];
                r = intern(s, kid, depth + 1, &items[i]);
                if (s->nodes[kid].height >= height) height = s->nodes[kid].height + 1;
            }
        if (r) {
            Py_DECREF(key);
            return r;
        }
        if (!height) height = 1;
        PyObject *table = n->type == T_LIST ? s->lists : s->tuples;
        PyObject *found = PyDict_GetItemWithError(table, key);
        if (found) {
            id = (int32_t)PyLong_AsLong(found);
            Py_DECREF(key);
            break;
        }
        if (PyErr_Occurred()) {
            Py_DECREF(key);
            return -2;
        }
        PyObject *value = n->type == T_LIST ? PyList_New(count) : PyTuple_New(count);
        if (!value) {
            Py_DECREF(key);
            return -2;
        }
        for (i = 0; i < count; i++) {
            PyObject *item = PyList_GET_ITEM(s->values, items[i]);
            Py_INCREF(item);
            if (n->type == T_LIST) PyList_SET_ITEM(value, i, item);
            else PyTuple_SET_ITEM(value, i, item);
        }
        r = intern_key(s, table, key, value, &id);
        break;
    }
    default:
        return -1;  /* a dict: _flight_columns.columns refuses it */
    }
    if (r) return r;
    s->nodes[node].id = id;
    s->nodes[node].height = (uint8_t)height;
    *out = id;
    return 0;
}

/* The Python object of a node (for pg_config and pg_status), or NULL: *r says why. */
static PyObject *build(Scan *s, int32_t node, int depth, int *r) {
    Node *n = &s->nodes[node];
    if (depth > s->max_depth) { *r = -1; return NULL; }
    switch (n->type) {
    case T_NONE: Py_RETURN_NONE;
    case T_TRUE: Py_RETURN_TRUE;
    case T_FALSE: Py_RETURN_FALSE;
    case T_INT: return PyLong_FromLongLong(n->value);
    case T_FLOAT: { double d; uint64_t bits = (uint64_t)n->value; memcpy(&d, &bits, 8);
                    return PyFloat_FromDouble(d); }
    case T_STR: return PyUnicode_DecodeUTF8((const char *)s->data + n->a, (Py_ssize_t)n->b,
                                            "surrogatepass");
    default: break;
    }
    PyObject *out = n->type == T_DICT ? PyDict_New() : PyList_New(0);
    if (!out) { *r = -2; return NULL; }
    for (int64_t b = n->a; b >= 0; b = s->blocks[b].next)
        for (int64_t k = 0; k < s->blocks[b].count; k += n->type == T_DICT ? 2 : 1) {
            PyObject *item = build(s, s->kids[s->blocks[b].start + k], depth + 1, r);
            if (!item) { Py_DECREF(out); return NULL; }
            int failed;
            if (n->type == T_DICT) {
                PyObject *value = build(s, s->kids[s->blocks[b].start + k + 1], depth + 1, r);
                if (!value) { Py_DECREF(item); Py_DECREF(out); return NULL; }
                failed = PyDict_SetItem(out, item, value) < 0;
                Py_DECREF(value);
            } else {
                failed = PyList_Append(out, item) < 0;
            }
            Py_DECREF(item);
            if (failed) { Py_DECREF(out); *r = -2; return NULL; }
        }
    if (n->type == T_TUPLE) {
        PyObject *tuple = PyList_AsTuple(out);
        Py_DECREF(out);
        if (!tuple) *r = -2;
        return tuple;
    }
    return out;
}

/* The field index of key string `node`, -1 for none (cached on the node). */
static int field_of(Scan *s, int32_t node) {
    Node *n = &s->nodes[node];
    if (n->field != -2) return n->field;
    n->field = -1;
    if (n->type == T_STR)
        for (Py_ssize_t f = 0; f < s->n_fields; f++)
            if (is_text(s, node, s->field_names[f], s->field_sizes[f])) {
                n->field = (int8_t)f;
                break;
            }
    return n->field;
}

static int entry_row(Scan *s, int32_t entry, int32_t *row, int32_t frames_field) {
    if (s->nodes[entry].type != T_DICT) return -1;
    int32_t found[64];
    for (Py_ssize_t f = 0; f <= s->n_fields; f++) found[f] = -1;
    for (int64_t b = s->nodes[entry].a; b >= 0; b = s->blocks[b].next)
        for (int64_t i = 0; i < s->blocks[b].count; i += 2) {
            int f = field_of(s, s->kids[s->blocks[b].start + i]);
            if (f >= 0) found[f] = s->kids[s->blocks[b].start + i + 1];
        }
    int r;
    for (Py_ssize_t f = 0; f < s->n_fields - 1; f++) {
        row[f] = -1;
        if (found[f] >= 0 && (r = intern(s, found[f], 0, &row[f]))) return r;
    }
    row[s->n_fields - 1] = row[s->n_fields] = -1;
    int32_t frames = found[frames_field];
    if (frames < 0 || s->nodes[frames].type == T_NONE) return 0;
    if (s->nodes[frames].type != T_LIST) return -1;
    for (int64_t b = s->nodes[frames].a; b >= 0; b = s->blocks[b].next)
        for (int64_t i = 0; i < s->blocks[b].count; i++) {
            int32_t frame = s->kids[s->blocks[b].start + i];
            Node *n = &s->nodes[frame];
            if (n->type != T_DICT) return -1;
            if (n->frame == FRAME_UNKNOWN) {
                int32_t name = lookup(s, frame, "filename");
                if (name < 0 || s->nodes[name].type != T_STR) return -1;
                Node *t = &s->nodes[name];
                int inside = s->library_size <= t->b &&
                    memmem(s->data + t->a, (size_t)t->b, s->library, (size_t)s->library_size);
                s->nodes[frame].frame = inside ? FRAME_LIBRARY : FRAME_USER;
            }
            if (s->nodes[frame].frame == FRAME_LIBRARY) continue;
            int32_t line = lookup(s, frame, "line");
            if (line < 0) return -1;
            if ((r = intern(s, lookup(s, frame, "filename"), 0, &row[s->n_fields - 1])))
                return r;
            return intern(s, line, 0, &row[s->n_fields]);
        }
    return 0;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer data;
    PyObject *fields;
    const char *library;
    Py_ssize_t library_size;
    int max_depth;
    if (!PyArg_ParseTuple(args, "y*O!s#i", &data, &PyTuple_Type, &fields, &library,
                          &library_size, &max_depth))
        return NULL;
    Scan s;
    memset(&s, 0, sizeof s);
    s.data = data.buf;
    s.size = data.len;
    s.library = library;
    s.library_size = library_size;
    s.max_depth = max_depth;
    s.fixed[0] = s.fixed[1] = s.fixed[2] = -1;
    /* the fields, then "frames"; the row has one column per field and two for the frame */
    s.n_fields = PyTuple_GET_SIZE(fields) + 1;
    PyObject *result = NULL;
    int r = -1;
    if (s.n_fields > 60) {
        PyErr_SetString(PyExc_ValueError, "too many fields");
        PyBuffer_Release(&data);
        return NULL;
    }
    const char *names[64];
    Py_ssize_t sizes[64];
    for (Py_ssize_t f = 0; f + 1 < s.n_fields; f++) {
        names[f] = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(fields, f), &sizes[f]);
        if (!names[f]) { PyBuffer_Release(&data); return NULL; }
    }
    names[s.n_fields - 1] = "frames";
    sizes[s.n_fields - 1] = 6;
    s.field_names = names;
    s.field_sizes = sizes;
    s.values = PyList_New(0);
    s.strs = PyDict_New();
    s.ints = PyDict_New();
    s.floats = PyDict_New();
    s.lists = PyDict_New();
    s.tuples = PyDict_New();
    PyObject *ids = NULL, *config = NULL, *status = NULL;
    if (!s.values || !s.strs || !s.ints || !s.floats || !s.lists || !s.tuples) goto done;
    if ((r = size(&s))) goto done;
    /* nodes 0, 1, 2: None, True, False */
    if (new_node(&s, T_NONE, 0, 0) || new_node(&s, T_TRUE, 0, 0) ||
        new_node(&s, T_FALSE, 0, 0)) { r = -2; goto done; }
    s.sp = 0;
    int32_t root = -1;
    if ((r = walk(&s, &root))) goto done;
    r = -1;
    if (s.nodes[root].type != T_DICT) goto done;
    int32_t entries = lookup(&s, root, "entries");
    if (entries < 0 || s.nodes[entries].type != T_LIST) goto done;
    Py_ssize_t count = 0;
    for (int64_t b = s.nodes[entries].a; b >= 0; b = s.blocks[b].next)
        count += s.blocks[b].count;
    Py_ssize_t width = s.n_fields + 1;
    ids = PyBytes_FromStringAndSize(NULL, count * width * (Py_ssize_t)sizeof(int32_t));
    if (!ids) { r = -2; goto done; }
    int32_t *row = (int32_t *)PyBytes_AS_STRING(ids);
    for (int64_t b = s.nodes[entries].a; b >= 0; b = s.blocks[b].next)
        for (int64_t i = 0; i < s.blocks[b].count; i++, row += width)
            if ((r = entry_row(&s, s.kids[s.blocks[b].start + i], row, (int32_t)s.n_fields - 1)))
                goto done;
    int32_t node = lookup(&s, root, "pg_config");
    if (node < 0) { config = Py_None; Py_INCREF(config); }
    else if (!(config = build(&s, node, 0, &r))) goto done;
    node = lookup(&s, root, "pg_status");
    if (node < 0) { status = Py_None; Py_INCREF(status); }
    else if (!(status = build(&s, node, 0, &r))) goto done;
    result = PyTuple_Pack(4, s.values, ids, config, status);
    r = result ? 0 : -2;
done:
    if (r == -1) {
        PyErr_Clear();
        Py_INCREF(Py_None);
        result = Py_None;
    }
    Py_XDECREF(ids);
    Py_XDECREF(config);
    Py_XDECREF(status);
    Py_XDECREF(s.values);
    Py_XDECREF(s.strs);
    Py_XDECREF(s.ints);
    Py_XDECREF(s.floats);
    Py_XDECREF(s.lists);
    Py_XDECREF(s.tuples);
    PyMem_Free(s.nodes);
    PyMem_Free(s.kids);
    PyMem_Free(s.blocks);
    PyMem_Free(s.stack);
    PyMem_Free(s.marks);
    PyMem_Free(s.memo);
    PyBuffer_Release(&data);
    if (r == -2 && !PyErr_Occurred()) PyErr_NoMemory();
    return r == -2 ? NULL : result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(data, fields, library, max_depth) -> (values, ids, pg_config, pg_status) or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_flight_scan", NULL, -1, methods};

PyMODINIT_FUNC PyInit__flight_scan(void) { return PyModule_Create(&module); }
