/* A Flight Recorder dump's pickle read into columns without building its objects
 * (order/_flight_columns.py says what the columns are).
 *
 * scan(data, fields, library, max_depth) keeps no tree of the pickle. A first pass over the
 * opcodes' lengths (twice: to size the memo, then to mark it) notes which memo entries a later
 * opcode fetches and how many dicts there are. The walk then runs the unpickler's stack
 * machine over small summaries: each value on the stack is 16 bytes (a
 * string points into data, a number is itself, a tuple is its interned id), only the memo
 * entries that are fetched are kept, and each container is summarised as it fills, not kept:
 *
 * - a list: while its items are plain values (strings, numbers, booleans, None, lists and
 *   tuples of them), their interned ids, from which the list is interned once complete;
 *   while they are dicts, those dicts (the entries); and, read as a stack, the filename and
 *   line of its first frame whose filename does not hold `library`;
 * - a dict: the interned ids of the values of `fields` (an entry's row) and of "filename" and
 *   "line" (a frame's), which the entries and frames they end in then read.
 *
 * Interning keys each distinct value by its type and content (a list or tuple by its items'
 * ids) without building it; the values an entry's row names are built as Python objects at the
 * end, given ids in the order _flight_columns.columns gives them (an entry's fields in order,
 * a list's or tuple's items before it). The top dict's "pg_config" and "pg_status", the only
 * containers built, are built when set on it, by running again the opcodes that made and filled
 * them (their spans are kept for every list and dict). A container once fetched from the memo
 * or made an item of another is complete: any later change to it is declined. Frames are read
 * as the unpickler reads a file (Reader).
 *
 * It returns (values, ids as int32 bytes, pg_config, pg_status), or None to decline: for any
 * opcode beyond the plain values of protocols 2 to 5 (dicts, lists, tuples, strings, ints
 * within int64, floats, booleans, None, the memo, marks and frames), for anything Python's
 * unpickler would refuse, and for any dump whose columns it does not give exactly as
 * _flight_columns.columns does. The caller then reads the dump with Python's unpickler.
 *
 * Memory: the data, the memo entries fetched later, a record per dict the entries list or the
 * memo holds (its row: 4 bytes a field and frame column), and the distinct values interned.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { T_NONE, T_TRUE, T_FALSE, T_INT, T_FLOAT, T_STR, T_TUPLE, T_LIST, T_DICT, T_UNSET };

typedef struct {
    uint8_t type;
    uint8_t hashable;
    uint8_t height;     /* lists and tuples nested in the value, itself included (saturating) */
    int8_t key;         /* a string's index among the known keys: -2 not yet known, -1 none */
    int32_t iid;        /* its interned id: -1 not yet (a scalar), or not internable (a tuple) */
    union {
        int64_t value;  /* an int's value, a float's bits */
        struct {
            int32_t a;  /* a string's offset; a list's or dict's record */
            int32_t b;  /* a string's length */
        };
    };
} Val;

/* A list's record. */
enum { M_EMPTY, M_VALUES, M_DICTS, M_OTHER };  /* what its items are */
enum { F_SEARCH, F_FOUND, F_BAD };             /* its first user frame, read as a stack */
typedef struct {
    int32_t refs;       /* the stack's, the memo's and the top dict's; the next free record */
    uint8_t sealed, mode, frames, height;
    int32_t iid;        /* once sealed: its interned id, -1 when not internable */
    int32_t fn, line;   /* F_FOUND: its first user frame's filename and line */
    int32_t *items;     /* M_VALUES: the items' interned ids; M_DICTS: their dict records */
    int32_t count, cap;
    int32_t start, end; /* the opcodes that made and filled it */
} List;

/* A dict's record: int32s at a stride of D_COLS + width. */
enum { D_REFS, D_FLAGS, D_BAD, D_FNAME, D_LINE, D_START, D_END, D_COLS };
enum { D_SEALED = 1, D_HAS_FNAME = 2, D_FNAME_STR = 4, D_LIBRARY = 8, D_HAS_LINE = 16,
       D_LINE_OK = 32 };
/* D_BAD: a bit per field (and one for "frames") whose value no column can hold */

typedef struct {
    uint32_t hash;
    uint8_t type, height;
    int32_t final;      /* its id among the values returned, -1 until given */
    union {
        int64_t value;
        struct { int32_t a, b; };  /* a string's span; a list's or tuple's items in pool */
    };
} Interned;

typedef struct {
    const unsigned char *data;
    Py_ssize_t size;
    Val *stack;
    Py_ssize_t sp, cap_stack;
    Py_ssize_t *marks;
    Py_ssize_t n_marks, cap_marks;
    int32_t *mark_at;    /* each mark's opcode */
    Py_ssize_t cap_mark_at;
    int32_t op_start, op_end;  /* the opcode being run */
    int reput;           /* whether a memo index was put twice */
    /* the memo: which indexes are put and fetched, and the fetched ones' values */
    uint64_t *put, *got;
    uint32_t *rank;      /* fetched indexes below each word of got */
    Py_ssize_t memo_cap, memo_len, n_kept;
    Val *memo;
    /* records */
    int32_t *dicts;
    Py_ssize_t n_dicts, cap_dicts, max_dicts, stride;
    int32_t free_dict;
    List *lists;
    Py_ssize_t n_lists, cap_lists;
    int32_t free_list;
    /* interning */
    Interned *vals;
    Py_ssize_t n_vals, cap_vals;
    int32_t *table;      /* open addressing: index + 1 into vals, 0 empty */
    Py_ssize_t table_size;
    int32_t *pool;
    Py_ssize_t n_pool, cap_pool;
    PyObject *values;
    /* keys: the fields, then the names below */
    int n_fields, n_keys, width, max_depth;
    const char *names[64];
    Py_ssize_t sizes[64];
    const char *library;
    Py_ssize_t library_size;
    /* the top dict */
    int32_t root;         /* the dict record the three below were set on, -1 none */
    Val entries;          /* T_UNSET until set */
    int entries_bad, config_bad, status_bad;
    PyObject *config, *status;
} Scan;

#define K_FRAMES(s) ((s)->n_fields)
#define K_FILENAME(s) ((s)->n_fields + 1)
#define K_LINE(s) ((s)->n_fields + 2)
#define K_ENTRIES(s) ((s)->n_fields + 3)
#define K_CONFIG(s) ((s)->n_fields + 4)
#define K_STATUS(s) ((s)->n_fields + 5)
#define DICT(s, d) ((s)->dicts + (Py_ssize_t)(d) * (s)->stride)

#define GROW(ptr, n, cap, type)                                                  \
    do {                                                                         \
        if ((n) >= (cap)) {                                                      \
            Py_ssize_t c_ = (cap) ? 2 * (cap) : 64;                              \
            type *p_ = PyMem_Realloc((ptr), (size_t)c_ * sizeof(type));          \
            if (!p_) return -2;                                                  \
            (ptr) = p_;                                                          \
            (cap) = c_;                                                          \
        }                                                                        \
    } while (0)

/* Results of the helpers: 0 ok, -1 decline, -2 a Python error is set (memory). */

/* ---- interning ---- */

static uint32_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return (uint32_t)x;
}

static int rehash(Scan *s) {
    Py_ssize_t size = s->table_size ? 2 * s->table_size : 1024;
    int32_t *table = PyMem_Calloc((size_t)size, sizeof(int32_t));
    if (!table) return -2;
    for (Py_ssize_t i = 0; i < s->n_vals; i++) {
        Py_ssize_t at = s->vals[i].hash & (size - 1);
        while (table[at]) at = (at + 1) & (size - 1);
        table[at] = (int32_t)i + 1;
    }
    PyMem_Free(s->table);
    s->table = table;
    s->table_size = size;
    return 0;
}

static int same(Scan *s, const Interned *v, uint8_t type, int64_t value, int32_t a, int32_t b,
                const int32_t *items) {
    if (v->type != type) return 0;
    switch (type) {
    case T_STR:
        return v->b == b && memcmp(s->data + v->a, s->data + a, (size_t)b) == 0;
    case T_LIST: case T_TUPLE:
        return v->b == b && memcmp(s->pool + v->a, items, (size_t)b * sizeof(int32_t)) == 0;
    default:
        return v->value == value;
    }
}

/* The id of the value of `type` keyed by `value` (numbers), the span a, b (a string) or
 * `items` (b of them: a list or tuple of `height`); new values are added. */
static int intern(Scan *s, uint8_t type, int64_t value, int32_t a, int32_t b,
                  const int32_t *items, int height, int32_t *out) {
    uint32_t hash;
    if (type == T_STR) {
        uint64_t h = 1469598103934665603ULL;
        for (int32_t i = 0; i < b; i++) h = (h ^ s->data[a + i]) * 1099511628211ULL;
        hash = mix(h ^ T_STR);
    } else if (type == T_LIST || type == T_TUPLE) {
        uint64_t h = (uint64_t)type * 0x9e3779b97f4a7c15ULL + (uint64_t)b;
        for (int32_t i = 0; i < b; i++) h = (h ^ (uint32_t)items[i]) * 0x100000001b3ULL;
        hash = mix(h);
    } else {
        hash = mix((uint64_t)value * 31 + type);
    }
    if (2 * (s->n_vals + 1) > s->table_size && rehash(s)) return -2;
    Py_ssize_t at = hash & (s->table_size - 1);
    for (int32_t i; (i = s->table[at]); at = (at + 1) & (s->table_size - 1))
        if (s->vals[i - 1].hash == hash && same(s, &s->vals[i - 1], type, value, a, b, items)) {
            *out = i - 1;
            return 0;
        }
    if (s->n_vals >= INT32_MAX - 1) return -1;
    GROW(s->vals, s->n_vals, s->cap_vals, Interned);
    Interned *v = &s->vals[s->n_vals];
    v->hash = hash;
    v->type = type;
    v->height = (uint8_t)height;
    v->final = -1;
    if (type == T_LIST || type == T_TUPLE) {
        while (s->n_pool + b > s->cap_pool) GROW(s->pool, s->cap_pool, s->cap_pool, int32_t);
        memcpy(s->pool + s->n_pool, items, (size_t)b * sizeof(int32_t));
        v->a = (int32_t)s->n_pool;
        v->b = b;
        s->n_pool += b;
    } else if (type == T_STR) {
        v->a = a;
        v->b = b;
    } else {
        v->value = value;
    }
    s->table[at] = (int32_t)s->n_vals + 1;
    *out = (int32_t)s->n_vals++;
    return 0;
}

static int intern_scalar(Scan *s, Val *v) {
    if (v->iid >= 0) return 0;
    return intern(s, v->type, v->type == T_STR ? 0 : v->value, v->a, v->b, NULL, 0, &v->iid);
}

/* ---- records ---- */

static void drop_dict(Scan *s, int32_t d) {
    int32_t *r = DICT(s, d);
    if (--r[D_REFS] == 0) {
        r[D_REFS] = s->free_dict;
        s->free_dict = d;
    }
}

static void drop_list(Scan *s, int32_t l) {
    List *r = &s->lists[l];
    if (--r->refs) return;
    if (r->mode == M_DICTS)
        for (int32_t i = 0; i < r->count; i++) drop_dict(s, r->items[i]);
    PyMem_Free(r->items);
    r->items = NULL;
    r->refs = s->free_list;
    s->free_list = l;
}

static void hold(Scan *s, const Val *v) {
    if (v->type == T_LIST) s->lists[v->a].refs++;
    else if (v->type == T_DICT) DICT(s, v->a)[D_REFS]++;
}

static void drop(Scan *s, const Val *v) {
    if (v->type == T_LIST) drop_list(s, v->a);
    else if (v->type == T_DICT) drop_dict(s, v->a);
}

static int new_dict(Scan *s, int32_t *out) {
    int32_t d = s->free_dict;
    if (d >= 0) {
        s->free_dict = DICT(s, d)[D_REFS];
    } else {
        if (s->n_dicts >= s->max_dicts) return -1;  /* beyond what the first pass counted */
        if (s->n_dicts >= s->cap_dicts) {
            Py_ssize_t cap = s->cap_dicts ? 2 * s->cap_dicts : 64;
            if (cap > s->max_dicts) cap = s->max_dicts;
            int32_t *p = PyMem_Realloc(s->dicts, (size_t)(cap * s->stride) * sizeof(int32_t));
            if (!p) return -2;
            s->dicts = p;
            s->cap_dicts = cap;
        }
        d = (int32_t)s->n_dicts++;
    }
    int32_t *r = DICT(s, d);
    r[D_REFS] = 1;
    r[D_FLAGS] = r[D_BAD] = 0;
    for (Py_ssize_t i = D_FNAME; i < s->stride; i++) r[i] = -1;
    *out = d;
    return 0;
}

static int new_list(Scan *s, int32_t *out) {
    int32_t l = s->free_list;
    if (l >= 0) {
        s->free_list = s->lists[l].refs;
    } else {
        if (s->n_lists >= INT32_MAX) return -1;
        GROW(s->lists, s->n_lists, s->cap_lists, List);
        l = (int32_t)s->n_lists++;
    }
    List *r = &s->lists[l];
    memset(r, 0, sizeof *r);
    r->refs = 1;
    r->height = 1;
    r->iid = r->fn = r->line = -1;
    *out = l;
    return 0;
}

/* No more changes to a list: intern it when its items are plain values. */
static int seal_list(Scan *s, int32_t l) {
    List *r = &s->lists[l];
    if (r->sealed) return 0;
    r->sealed = 1;
    if (r->mode != M_EMPTY && r->mode != M_VALUES) return 0;
    int32_t iid;
    int found = intern(s, T_LIST, 0, 0, r->count, r->items, r->height, &iid);
    r = &s->lists[l];
    if (found) return found;
    r->iid = iid;
    PyMem_Free(r->items);
    r->items = NULL;
    r->cap = 0;
    return 0;
}

/* A value taken off the stack into another (or fetched from the memo): complete. */
static int seal(Scan *s, const Val *v) {
    if (v->type == T_LIST) return seal_list(s, v->a);
    if (v->type == T_DICT) DICT(s, v->a)[D_FLAGS] |= D_SEALED;
    return 0;
}

/* Whether `v` (sealed) is a plain value: 1 with its id and height, 0 not, -2 memory. */
static int plain(Scan *s, Val *v, int32_t *iid, int *height) {
    switch (v->type) {
    case T_NONE: case T_TRUE: case T_FALSE: case T_INT: case T_FLOAT: case T_STR:
        if (intern_scalar(s, v)) return -2;
        *iid = v->iid;
        *height = 0;
        return 1;
    case T_TUPLE:
        *iid = v->iid;
        *height = v->height;
        return v->iid >= 0;
    case T_LIST:
        *iid = s->lists[v->a].iid;
        *height = s->lists[v->a].height;
        return *iid >= 0;
    default:
        return 0;
    }
}

/* ---- Python objects (pg_config, pg_status) ---- */

static PyObject *scalar_object(Scan *s, uint8_t type, int64_t value, int32_t a, int32_t b) {
    switch (type) {
    case T_NONE: Py_RETURN_NONE;
    case T_TRUE: Py_RETURN_TRUE;
    case T_FALSE: Py_RETURN_FALSE;
    case T_INT: return PyLong_FromLongLong(value);
    case T_FLOAT: {
        double d;
        uint64_t bits = (uint64_t)value;
        memcpy(&d, &bits, 8);
        return PyFloat_FromDouble(d);
    }
    default:
        return PyUnicode_DecodeUTF8((const char *)s->data + a, (Py_ssize_t)b, "surrogatepass");
    }
}

/* Scalar `v` as a new reference, or NULL: a Python error is set. */
static PyObject *object(Scan *s, const Val *v) {
    return scalar_object(s, v->type, v->type == T_STR ? 0 : v->value, v->a, v->b);
}

/* ---- the stack ---- */

static Py_ssize_t fence(Scan *s) { return s->n_marks ? s->marks[s->n_marks - 1] : 0; }

static int push(Scan *s, Val v) {
    GROW(s->stack, s->sp, s->cap_stack, Val);
    s->stack[s->sp++] = v;
    return 0;
}

static int push_scalar(Scan *s, uint8_t type, int64_t value) {
    Val v = {.type = type, .hashable = 1, .key = -1, .iid = -1};
    v.value = value;
    return push(s, v);
}

static int key_of(Scan *s, Val *v) {
    if (v->type != T_STR) return -1;
    if (v->key != -2) return v->key;
    v->key = -1;
    for (int k = 0; k < s->n_keys; k++)
        if (s->sizes[k] == v->b && memcmp(s->data + v->a, s->names[k], (size_t)v->b) == 0) {
            v->key = (int8_t)k;
            break;
        }
    return v->key;
}

/* The span of opcodes that made and filled list or dict `v`. */
static void span(Scan *s, const Val *v, int32_t start, int32_t end) {
    if (v->type == T_LIST) {
        if (start >= 0) s->lists[v->a].start = start;
        s->lists[v->a].end = end;
    } else if (v->type == T_DICT) {
        if (start >= 0) DICT(s, v->a)[D_START] = start;
        DICT(s, v->a)[D_END] = end;
    }
}

static int empty(Scan *s, int type) {
    Val v = {.type = (uint8_t)type, .hashable = type == T_TUPLE, .height = 1, .key = -1,
             .iid = -1};
    int r;
    if (type == T_TUPLE)
        r = intern(s, T_TUPLE, 0, 0, 0, NULL, 1, &v.iid);
    else
        r = type == T_DICT ? new_dict(s, &v.a) : new_list(s, &v.a);
    if (r) return r;
    span(s, &v, s->op_start, s->op_end);
    return push(s, v);
}

/* ---- filling containers: each takes its items' references ---- */

static int append(Scan *s, int32_t l, Val *v) {
    int r;
    if ((r = seal(s, v))) return r;
    List *list = &s->lists[l];
    if (list->frames == F_SEARCH) {
        if (v->type != T_DICT) {
            list->frames = F_BAD;
        } else {
            int32_t *d = DICT(s, v->a);
            int flags = d[D_FLAGS];
            if (!(flags & D_HAS_FNAME) || !(flags & D_FNAME_STR)) {
                list->frames = F_BAD;
            } else if (!(flags & D_LIBRARY)) {
                list->frames = (flags & D_HAS_LINE) && (flags & D_LINE_OK) ? F_FOUND : F_BAD;
                list->fn = d[D_FNAME];
                list->line = d[D_LINE];
            }
        }
    }
    if (list->mode == M_EMPTY) list->mode = v->type == T_DICT ? M_DICTS : M_VALUES;
    if (list->mode == M_DICTS && v->type == T_DICT) {
        GROW(list->items, list->count, list->cap, int32_t);
        list->items[list->count++] = v->a;
        return 0;  /* the list holds the dict */
    }
    int32_t iid = -1;
    int height = 0;
    int is_plain = list->mode == M_VALUES ? plain(s, v, &iid, &height) : 0;
    if (is_plain < 0) return is_plain;
    list = &s->lists[l];
    if (is_plain) {
        GROW(list->items, list->count, list->cap, int32_t);
        list->items[list->count++] = iid;
        if (height + 1 > list->height) list->height = (uint8_t)(height < 254 ? height + 1 : 255);
    } else if (list->mode != M_OTHER) {
        if (list->mode == M_DICTS)
            for (int32_t i = 0; i < list->count; i++) drop_dict(s, list->items[i]);
        PyMem_Free(list->items);
        list->items = NULL;
        list->count = list->cap = 0;
        list->mode = M_OTHER;
    }
    drop(s, v);
    return 0;
}

static int replay(Scan *s, int32_t start, int32_t end, PyObject **out);

/* Set key k to v on dict record d, at stack position `at`. */
static int set_item(Scan *s, int32_t d, Py_ssize_t at, Val *k, Val *v) {
    int r;
    if (!k->hashable) return -1;
    if ((r = seal(s, k)) || (r = seal(s, v))) return r;
    int key = key_of(s, k);
    if (key >= 0 && (key < s->n_fields || key == K_LINE(s))) {
        int32_t iid = -1;
        int height = 0;
        int ok = plain(s, v, &iid, &height);
        if (ok < 0) return ok;
        ok = ok && height <= s->max_depth;
        int32_t *rec = DICT(s, d);
        if (key == K_LINE(s)) {
            rec[D_FLAGS] = (rec[D_FLAGS] & ~D_LINE_OK) | D_HAS_LINE | (ok ? D_LINE_OK : 0);
            rec[D_LINE] = iid;
        } else {
            rec[D_COLS + key] = ok ? iid : -1;
            rec[D_BAD] = ok ? rec[D_BAD] & ~(1 << key) : rec[D_BAD] | (1 << key);
        }
    } else if (key == K_FRAMES(s)) {
        int32_t fn = -1, line = -1;
        int bad = 0;
        if (v->type == T_LIST) {
            List *list = &s->lists[v->a];
            bad = list->frames == F_BAD;
            if (list->frames == F_FOUND) {
                fn = list->fn;
                line = list->line;
            }
        } else if (v->type != T_NONE) {
            bad = 1;
        }
        int32_t *rec = DICT(s, d);
        rec[D_COLS + s->n_fields] = fn;
        rec[D_COLS + s->n_fields + 1] = line;
        rec[D_BAD] = bad ? rec[D_BAD] | (1 << key) : rec[D_BAD] & ~(1 << key);
    } else if (key == K_FILENAME(s)) {
        int flags = D_HAS_FNAME;
        int32_t iid = -1;
        if (v->type == T_STR) {
            if (intern_scalar(s, v)) return -2;
            iid = v->iid;
            flags |= D_FNAME_STR;
            if (s->library_size <= v->b &&
                memmem(s->data + v->a, (size_t)v->b, s->library, (size_t)s->library_size))
                flags |= D_LIBRARY;
        }
        int32_t *rec = DICT(s, d);
        rec[D_FLAGS] = (rec[D_FLAGS] & ~(D_FNAME_STR | D_LIBRARY)) | flags;
        rec[D_FNAME] = iid;
    } else if (key >= K_ENTRIES(s) && at == 0) {
        if (s->root != d) {  /* another dict at the bottom: what was set on the last goes */
            if (s->root >= 0) drop_dict(s, s->root);
            drop(s, &s->entries);
            s->entries.type = T_UNSET;
            Py_CLEAR(s->config);
            Py_CLEAR(s->status);
            s->entries_bad = s->config_bad = s->status_bad = 0;
            s->root = d;
            DICT(s, d)[D_REFS]++;
        }
        if (key == K_ENTRIES(s)) {
            drop(s, &s->entries);
            s->entries.type = T_UNSET;
            s->entries_bad = v->type != T_LIST && v->type != T_NONE;
            if (!s->entries_bad) {
                s->entries = *v;
                hold(s, v);
            }
        } else {
            PyObject **slot = key == K_CONFIG(s) ? &s->config : &s->status;
            int *bad = key == K_CONFIG(s) ? &s->config_bad : &s->status_bad;
            PyObject *obj = NULL;
            if (v->type <= T_STR) {
                if (!(obj = object(s, v))) return -2;
            } else if (v->type == T_DICT || v->type == T_LIST) {
                int32_t start = v->type == T_DICT ? DICT(s, v->a)[D_START] : s->lists[v->a].start;
                int32_t end = v->type == T_DICT ? DICT(s, v->a)[D_END] : s->lists[v->a].end;
                if ((r = replay(s, start, end, &obj)) == -2) return r;
            }
            PyObject *old = *slot;
            *slot = obj;
            Py_XDECREF(old);
            *bad = obj == NULL;
        }
    }
    drop(s, k);
    drop(s, v);
    return 0;
}

static void pop_to(Scan *s, Py_ssize_t from) {
    while (s->sp > from) drop(s, &s->stack[--s->sp]);
}

/* stack[from:] added to the container at stack[from - 1] (APPENDS, SETITEMS and the like). */
static int fill(Scan *s, Py_ssize_t from, int dict) {
    Val *target = &s->stack[from - 1];
    if (dict && (s->sp - from) % 2) return -1;
    if (target->type != (dict ? T_DICT : T_LIST)) return -1;
    if (s->sp == from) return 0;
    int32_t rec = target->a;
    if (dict ? DICT(s, rec)[D_FLAGS] & D_SEALED : s->lists[rec].sealed) return -1;
    for (Py_ssize_t i = from; i < s->sp; i += dict ? 2 : 1)
        if (dict && !s->stack[i].hashable) return -1;
    int r = 0;
    Py_ssize_t i = from;
    for (; i < s->sp && !r; i += dict ? 2 : 1) {
        if (dict) r = set_item(s, rec, from - 1, &s->stack[i], &s->stack[i + 1]);
        else r = append(s, rec, &s->stack[i]);
        if (!r) {  /* taken: nothing left to release there */
            s->stack[i].type = T_NONE;
            if (dict) s->stack[i + 1].type = T_NONE;
        }
    }
    if (r) return r;
    s->sp = from;  /* the items' references were taken */
    span(s, target, -1, s->op_end);
    return 0;
}

/* stack[from:] become a new container in their place (TUPLE1-3, TUPLE, LIST, DICT); a list
 * or dict is made by the opcode at `start` (its mark). */
static int gather(Scan *s, int type, Py_ssize_t from, int32_t start) {
    int r = 0;
    if (type == T_TUPLE) {
        Py_ssize_t count = s->sp - from;
        Val v = {.type = T_TUPLE, .hashable = 1, .height = 1, .key = -1, .iid = -1};
        int32_t small[16], *items = count <= 16 ? small : PyMem_Malloc(
            (size_t)count * sizeof(int32_t));
        if (!items) return -2;
        int all = 1;
        for (Py_ssize_t i = from; i < s->sp && !r; i++) {
            Val *item = &s->stack[i];
            int height = 0;
            v.hashable &= item->hashable;
            if ((r = seal(s, item))) break;
            int ok = all ? plain(s, item, &items[i - from], &height) : 0;
            if (ok < 0) r = ok;
            all &= ok == 1;
            if (height + 1 > v.height) v.height = (uint8_t)(height < 254 ? height + 1 : 255);
        }
        if (!r && all && count < INT32_MAX)
            r = intern(s, T_TUPLE, 0, 0, (int32_t)count, items, v.height, &v.iid);
        if (items != small) PyMem_Free(items);
        if (r) return r;
        pop_to(s, from);
        return push(s, v);
    }
    /* a list or dict: an empty one below the items, then filled */
    GROW(s->stack, s->sp, s->cap_stack, Val);  /* room for one more */
    memmove(s->stack + from + 1, s->stack + from, (size_t)(s->sp - from) * sizeof(Val));
    s->sp++;
    Val v = {.type = (uint8_t)type, .key = -1, .iid = -1, .height = 1};
    if ((r = type == T_DICT ? new_dict(s, &v.a) : new_list(s, &v.a))) {
        memmove(s->stack + from, s->stack + from + 1, (size_t)(s->sp - from - 1) * sizeof(Val));
        s->sp--;
        return r;
    }
    s->stack[from] = v;
    span(s, &v, start, s->op_end);
    return fill(s, from + 1, type == T_DICT);
}

/* ---- the memo ---- */

static int bit(const uint64_t *bits, Py_ssize_t i) { return (int)(bits[i >> 6] >> (i & 63)) & 1; }

static Py_ssize_t kept(Scan *s, Py_ssize_t i) {
    uint64_t below = s->got[i >> 6] & ((((uint64_t)1) << (i & 63)) - 1);
    return s->rank[i >> 6] + __builtin_popcountll(below);
}

static int memo_put(Scan *s, Py_ssize_t i) {
    if (s->sp <= fence(s) || i < 0 || i >= s->memo_cap) return -1;
    if (!bit(s->put, i)) {
        s->put[i >> 6] |= ((uint64_t)1) << (i & 63);
        s->memo_len++;
    } else {
        s->reput = 1;
    }
    if (!bit(s->got, i)) return 0;  /* never fetched: not kept */
    Val *top = &s->stack[s->sp - 1];
    if (top->type == T_STR) {  /* fetched strings are mostly keys and repeated values */
        key_of(s, top);
        if (intern_scalar(s, top)) return -2;
    }
    Val *slot = &s->memo[kept(s, i)];
    if (slot->type != T_UNSET) drop(s, slot);
    *slot = *top;
    hold(s, slot);
    return 0;
}

static int memo_get(Scan *s, Py_ssize_t i) {
    if (i < 0 || i >= s->memo_cap || !bit(s->got, i)) return -1;
    Val *slot = &s->memo[kept(s, i)];
    if (slot->type == T_UNSET) return -1;
    int r = seal(s, slot);
    if (r) return r;
    hold(s, slot);
    return push(s, *slot);
}

/* ---- opcodes ---- */

static uint64_t le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* The opcodes as Python's unpickler reads them from a file: each read comes from the bytes
 * buffered (a FRAME buffers its length of them) or, once they are used up, fresh from the
 * file. A read that would start in the buffer and end past it (the unpickler would drop the
 * rest of the buffer and read on after it) is declined, as is one past the data's end: every
 * read is then of the bytes that follow, in order. */
typedef struct {
    const unsigned char *data;
    Py_ssize_t size, pos, buffered;  /* the next byte; the end of the bytes buffered */
} Reader;

static int take(Reader *in, uint64_t n, const unsigned char **at) {
    if (n > (uint64_t)(in->size - in->pos)) return -1;
    if (in->pos + (Py_ssize_t)n > in->buffered) {
        if (in->pos != in->buffered) return -1;
        in->buffered = in->pos + (Py_ssize_t)n;
    }
    *at = in->data + in->pos;
    in->pos += (Py_ssize_t)n;
    return 0;
}

/* The next opcode in *op, its number (a count, an index, a length) in *arg and where its
 * payload starts in *payload (strings and longs: `*arg` bytes of it, a float's 8); -1 when
 * the data ends first or the read is declined. */
static int next_op(Reader *in, unsigned char *op, uint64_t *arg,
                   const unsigned char **payload) {
    const unsigned char *at;
    int width = 0;   /* bytes of the little-endian number */
    int sized = 0;   /* whether that number is the length of a payload that follows */
    if (take(in, 1, &at)) return -1;
    *op = *at;
    switch (*op) {
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
    if (take(in, (uint64_t)width, &at)) return -1;
    *arg = *op == 'G' ? 0 : le(at, width);
    *payload = at;
    if (*op == 0x8b && (int32_t)(uint32_t)*arg < 0) return -1;
    if (sized) return take(in, *arg, payload);
    if (*op == 0x95) {  /* FRAME: its bytes buffered, unless they already are */
        if (*arg > (uint64_t)(in->size - in->pos)) return -1;
        if (in->pos + (Py_ssize_t)*arg > in->buffered) {
            if (in->pos != in->buffered) return -1;
            in->buffered = in->pos + (Py_ssize_t)*arg;
        }
    }
    return 0;
}

/* ---- pg_config and pg_status: their opcodes run again, building Python objects ---- */

static PyObject *pop_list(PyObject *stack, Py_ssize_t from) {
    Py_ssize_t size = PyList_GET_SIZE(stack);
    PyObject *items = PyList_GetSlice(stack, from, size);
    if (items && PyList_SetSlice(stack, from, size, NULL)) Py_CLEAR(items);
    return items;
}

/* The value the opcodes in [start, end) make, the dict or list they made and filled during
 * the walk (which validated them): everything they make ends in it. Its memo fetches are of
 * values made within it, or of strings and numbers; else, or when the memo was put twice
 * (the walk's memo is then not what these opcodes saw), it declines. */
static int replay(Scan *s, int32_t start, int32_t end, PyObject **out) {
    Reader in = {s->data, s->size, 0, 0};
    uint64_t memo_len = 0;  /* MEMOIZE's index: the puts before (no index is put twice) */
    while (in.pos < start) {
        unsigned char op;
        uint64_t arg;
        const unsigned char *payload;
        if (next_op(&in, &op, &arg, &payload)) return -1;
        memo_len += op == 'q' || op == 'r' || op == 0x94;
    }
    PyObject *stack = PyList_New(0), *memo = PyDict_New(), *made = NULL, *item = NULL;
    Py_ssize_t marks[64];
    int n_marks = 0, r = -2;
    if (!stack || !memo) goto done;
    r = -1;
    if (s->reput) goto done;
    while (in.pos < end) {
        unsigned char op;
        uint64_t arg = 0;
        const unsigned char *payload;
        if (next_op(&in, &op, &arg, &payload)) goto done;
        Py_ssize_t size = PyList_GET_SIZE(stack);
        made = NULL;
        switch (op) {
        case 0x95: continue;
        case '(':
            if (n_marks == 64) goto done;
            marks[n_marks++] = size;
            continue;
        case '}': made = PyDict_New(); break;
        case ']': made = PyList_New(0); break;
        case ')': made = PyTuple_New(0); break;
        case 'N': made = Py_NewRef(Py_None); break;
        case 0x88: made = Py_NewRef(Py_True); break;
        case 0x89: made = Py_NewRef(Py_False); break;
        case 'J': made = PyLong_FromLong((int32_t)(uint32_t)arg); break;
        case 'K': case 'M': made = PyLong_FromUnsignedLongLong(arg); break;
        case 0x8a: case 0x8b: {
            if (arg > 8) goto done;
            uint64_t v = arg ? le(payload, (int)arg) : 0;
            if (arg && arg < 8 && (payload[arg - 1] & 0x80)) v |= ~(uint64_t)0 << (8 * arg);
            made = PyLong_FromLongLong((int64_t)v);
            break;
        }
        case 'G': { uint64_t v = 0;
                    for (int i = 0; i < 8; i++) v = (v << 8) | payload[i];
                    made = scalar_object(s, T_FLOAT, (int64_t)v, 0, 0); break; }
        case 'X': case 0x8c: case 0x8d:
            made = scalar_object(s, T_STR, 0, (int32_t)(payload - s->data), (int32_t)arg);
            break;
        case 'q': case 'r': case 0x94:
            if (op == 0x94) arg = memo_len;
            memo_len++;
            if (!size) goto done;
            if (arg < (uint64_t)s->memo_cap && bit(s->got, (Py_ssize_t)arg)) {
                PyObject *index = PyLong_FromUnsignedLongLong(arg);
                if (!index || PyDict_SetItem(memo, index, PyList_GET_ITEM(stack, size - 1))) {
                    Py_XDECREF(index);
                    r = -2;
                    goto done;
                }
                Py_DECREF(index);
            }
            continue;
        case 'h': case 'j': {
            PyObject *index = PyLong_FromUnsignedLongLong(arg);
            if (!index) { r = -2; goto done; }
            made = PyDict_GetItemWithError(memo, index);
            Py_DECREF(index);
            if (made) {
                Py_INCREF(made);
            } else if (PyErr_Occurred()) {
                r = -2;
                goto done;
            } else {  /* made before: a string or number */
                if (arg >= (uint64_t)s->memo_cap || !bit(s->got, (Py_ssize_t)arg)) goto done;
                Val *slot = &s->memo[kept(s, (Py_ssize_t)arg)];
                if (slot->type > T_STR) goto done;
                made = object(s, slot);
            }
            break;
        }
        case 0x85: case 0x86: case 0x87: case 't': case 'l': {
            Py_ssize_t from = op == 't' || op == 'l' ? (n_marks ? marks[--n_marks] : -1)
                                                     : size - (op - 0x84);
            if (from < (n_marks ? marks[n_marks - 1] : 0) && op != 't' && op != 'l') goto done;
            if (from < 0) goto done;
            if (!(made = pop_list(stack, from))) { r = -2; goto done; }
            if (op != 'l') {
                PyObject *tuple = PyList_AsTuple(made);
                Py_DECREF(made);
                made = tuple;
            }
            break;
        }
        case 'd': case 'e': case 'u': case 'a': case 's': {
            Py_ssize_t from = op == 'a' ? size - 1 : op == 's' ? size - 2
                            : n_marks ? marks[--n_marks] : -1;
            if (from < 0 || (op == 'd' ? from < 0 : from < 1)) goto done;
            if (!(item = pop_list(stack, from))) { r = -2; goto done; }
            PyObject *target = op == 'd' ? (made = PyDict_New())
                                         : PyList_GET_ITEM(stack, from - 1);
            if (!target) { r = -2; goto done; }
            Py_ssize_t count = PyList_GET_SIZE(item);
            int dict = op == 'd' || op == 'u' || op == 's';
            if (dict ? !PyDict_CheckExact(target) || count % 2 : !PyList_CheckExact(target))
                goto done;
            for (Py_ssize_t i = 0; i < count; i += dict ? 2 : 1)
                if (dict ? PyDict_SetItem(target, PyList_GET_ITEM(item, i),
                                          PyList_GET_ITEM(item, i + 1))
                         : PyList_Append(target, PyList_GET_ITEM(item, i))) {
                    PyErr_Clear();
                    goto done;
                }
            Py_CLEAR(item);
            if (op != 'd') continue;
            break;
        }
        default:
            goto done;
        }
        if (!made || PyList_Append(stack, made)) { r = -2; goto done; }
        Py_CLEAR(made);
    }
    if (PyList_GET_SIZE(stack) != 1 || n_marks) goto done;
    *out = Py_NewRef(PyList_GET_ITEM(stack, 0));
    r = 0;
done:
    if (r == -1) PyErr_Clear();
    Py_XDECREF(made);
    Py_XDECREF(item);
    Py_XDECREF(stack);
    Py_XDECREF(memo);
    return r;
}

/* The first pass: which memo indexes are fetched, and how many dicts are made. */
static int prescan(Scan *s) {
    Py_ssize_t top = 0, puts = 0, dicts = 0;
    if (s->size >= INT32_MAX) return -1;
    for (int round = 0; round < 2; round++) {
        Py_ssize_t memo_len = 0;
        Reader in = {s->data, s->size, 0, 0};
        unsigned char op;
        uint64_t arg = 0;
        const unsigned char *payload;
        while (!next_op(&in, &op, &arg, &payload) && op != '.') {
            int is_put = op == 'q' || op == 'r' || op == 0x94;
            int is_get = op == 'h' || op == 'j';
            if (op == 0x94) arg = (uint64_t)memo_len;
            if (round == 0) {
                if (op == '}' || op == 'd') dicts++;
                puts += is_put;
                if ((is_put || is_get) && arg < (uint64_t)s->size && (Py_ssize_t)arg >= top)
                    top = (Py_ssize_t)arg + 1;
                if (op == 0x94) memo_len++;  /* an upper bound on the next MEMOIZE's index */
                continue;
            }
            if (arg >= (uint64_t)s->memo_cap) {
                if (is_put || is_get) break;  /* the second pass declines here */
                continue;
            }
            if (is_put && !bit(s->put, (Py_ssize_t)arg)) {
                s->put[arg >> 6] |= ((uint64_t)1) << (arg & 63);
                memo_len++;
            }
            if (is_get) s->got[arg >> 6] |= ((uint64_t)1) << (arg & 63);
        }
        if (round == 0) {
            s->memo_cap = top > puts ? top : puts;
            s->max_dicts = dicts;
            Py_ssize_t words = (s->memo_cap + 63) / 64 + 1;
            s->put = PyMem_Calloc((size_t)words, sizeof(uint64_t));
            s->got = PyMem_Calloc((size_t)words, sizeof(uint64_t));
            s->rank = PyMem_Malloc((size_t)words * sizeof(uint32_t));
            if (!s->put || !s->got || !s->rank) return -2;
        }
    }
    Py_ssize_t words = (s->memo_cap + 63) / 64 + 1;
    uint32_t n = 0;
    for (Py_ssize_t w = 0; w < words; w++) {
        s->rank[w] = n;
        n += (uint32_t)__builtin_popcountll(s->got[w]);
        s->put[w] = 0;
    }
    s->n_kept = n;
    s->memo = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(Val));
    if (!s->memo) return -2;
    for (Py_ssize_t i = 0; i < n; i++) s->memo[i].type = T_UNSET;
    return 0;
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
    Val v = {.type = T_STR, .hashable = 1, .key = -2, .iid = -1};
    v.a = (int32_t)(p - s->data);
    v.b = (int32_t)len;
    return push(s, v);
}

static int long_int(Scan *s, const unsigned char *p, uint64_t n) {
    if (n > 8) return -1;
    if (n == 0) return push_scalar(s, T_INT, 0);
    uint64_t v = le(p, (int)n);
    if (n < 8 && (p[n - 1] & 0x80)) v |= ~(uint64_t)0 << (8 * n);
    return push_scalar(s, T_INT, (int64_t)v);
}

/* The second pass: the stack machine, to STOP. */
static int walk(Scan *s) {
    Reader in = {s->data, s->size, 0, 0};
    int r = 0;
    while (in.pos < in.size) {
        unsigned char op;
        uint64_t arg = 0;
        const unsigned char *payload;
        s->op_start = (int32_t)in.pos;
        if (next_op(&in, &op, &arg, &payload)) return -1;
        s->op_end = (int32_t)in.pos;
        switch (op) {
        case 0x80: if (arg > 5) return -1; break;                         /* PROTO */
        case 0x95: break;                                                 /* FRAME */
        case '.':                                                         /* STOP */
            if (s->sp != 1 || s->n_marks || s->stack[0].type != T_DICT) return -1;
            if (s->stack[0].a != s->root || DICT(s, s->root)[D_FLAGS] & D_SEALED) return -1;
            return 0;
        case '(':                                                         /* MARK */
            GROW(s->marks, s->n_marks, s->cap_marks, Py_ssize_t);
            GROW(s->mark_at, s->n_marks, s->cap_mark_at, int32_t);
            s->mark_at[s->n_marks] = s->op_start;
            s->marks[s->n_marks++] = s->sp;
            break;
        case '}': r = empty(s, T_DICT); break;
        case ']': r = empty(s, T_LIST); break;
        case ')': r = empty(s, T_TUPLE); break;
        case 'N': r = push_scalar(s, T_NONE, 0); break;
        case 0x88: r = push_scalar(s, T_TRUE, 1); break;
        case 0x89: r = push_scalar(s, T_FALSE, 0); break;
        case 'J': r = push_scalar(s, T_INT, (int32_t)(uint32_t)arg); break;
        case 'K': case 'M': r = push_scalar(s, T_INT, (int64_t)arg); break;
        case 0x8a: case 0x8b: r = long_int(s, payload, arg); break;
        case 'G': { uint64_t v = 0;                                       /* big-endian */
                    for (int i = 0; i < 8; i++) v = (v << 8) | payload[i];
                    r = push_scalar(s, T_FLOAT, (int64_t)v); break; }
        case 'X': case 0x8c: case 0x8d: r = string(s, payload, arg); break;
        case 'q': case 'r': r = memo_put(s, (Py_ssize_t)arg); break;
        case 0x94: r = memo_put(s, s->memo_len); break;
        case 'h': case 'j': r = memo_get(s, (Py_ssize_t)arg); break;
        case 0x85: case 0x86: case 0x87: {                                /* TUPLE1-3 */
            Py_ssize_t n = op - 0x84;
            if (s->sp - n < fence(s)) return -1;
            r = gather(s, T_TUPLE, s->sp - n, -1);
            break;
        }
        case 't': case 'l': case 'd': case 'e': case 'u': {             /* by mark */
            if (!s->n_marks) return -1;
            Py_ssize_t from = s->marks[--s->n_marks];
            if (op == 't' || op == 'l' || op == 'd') {
                if (op == 'd' && (s->sp - from) % 2) return -1;
                r = gather(s, op == 't' ? T_TUPLE : op == 'l' ? T_LIST : T_DICT, from,
                           s->mark_at[s->n_marks]);
                break;
            }
            if (from <= fence(s)) return -1;
            r = fill(s, from, op == 'u');
            break;
        }
        case 'a': case 's': {                                             /* APPEND, SETITEM */
            Py_ssize_t from = s->sp - (op == 'a' ? 1 : 2);
            if (from <= fence(s)) return -1;
            r = fill(s, from, op == 's');
            break;
        }
        default:
            return -1;
        }
        if (r) return r;
    }
    return -1;  /* no STOP: truncated */
}

/* ---- the result ---- */

/* The id among the values returned of interned value `iid`, given on first sight (a list's
 * or tuple's items before it), building the value when new. */
static int final_id(Scan *s, int32_t iid, int32_t *out) {
    Interned *v = &s->vals[iid];
    if (v->final >= 0) {
        *out = v->final;
        return 0;
    }
    PyObject *obj;
    if (v->type == T_LIST || v->type == T_TUPLE) {
        int32_t count = v->b, start = v->a, type = v->type;
        obj = type == T_LIST ? PyList_New(count) : PyTuple_New(count);
        if (!obj) return -2;
        for (int32_t i = 0; i < count; i++) {
            int32_t item;
            if (final_id(s, s->pool[start + i], &item)) {
                Py_DECREF(obj);
                return -2;
            }
            PyObject *value = PyList_GET_ITEM(s->values, item);
            Py_INCREF(value);
            if (type == T_LIST) PyList_SET_ITEM(obj, i, value);
            else PyTuple_SET_ITEM(obj, i, value);
        }
        v = &s->vals[iid];
    } else if (!(obj = scalar_object(s, v->type, v->value, v->a, v->b))) {
        return -2;
    }
    int failed = PyList_Append(s->values, obj);
    Py_DECREF(obj);
    if (failed) return -2;
    *out = v->final = (int32_t)PyList_GET_SIZE(s->values) - 1;
    return 0;
}

/* The entries' rows as int32 bytes, or NULL: *r says why. */
static PyObject *rows(Scan *s, int *r) {
    Py_ssize_t count = 0;
    const int32_t *dicts = NULL;
    if (s->entries_bad || s->entries.type == T_UNSET) { *r = -1; return NULL; }
    if (s->entries.type == T_LIST) {
        List *list = &s->lists[s->entries.a];
        if (list->mode != M_EMPTY && list->mode != M_DICTS) { *r = -1; return NULL; }
        count = list->mode == M_DICTS ? list->count : 0;
        dicts = list->items;
    }
    PyObject *ids = PyBytes_FromStringAndSize(NULL, count * s->width * (Py_ssize_t)4);
    if (!ids) { *r = -2; return NULL; }
    int32_t *row = (int32_t *)PyBytes_AS_STRING(ids);
    for (Py_ssize_t e = 0; e < count; e++, row += s->width) {
        const int32_t *rec = DICT(s, dicts[e]);
        if (rec[D_BAD]) { *r = -1; Py_DECREF(ids); return NULL; }
        for (int c = 0; c < s->width; c++) {
            row[c] = -1;
            if (rec[D_COLS + c] >= 0 && (*r = final_id(s, rec[D_COLS + c], &row[c]))) {
                Py_DECREF(ids);
                return NULL;
            }
        }
    }
    return ids;
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
    s.max_depth = max_depth < 250 ? max_depth : 250;
    s.n_fields = (int)PyTuple_GET_SIZE(fields);
    s.n_keys = s.n_fields + 6;
    s.width = s.n_fields + 2;
    s.stride = D_COLS + s.width;
    s.free_dict = s.free_list = s.root = -1;
    s.entries.type = T_UNSET;
    if (s.n_fields > 30) {
        PyErr_SetString(PyExc_ValueError, "too many fields");
        PyBuffer_Release(&data);
        return NULL;
    }
    for (int f = 0; f < s.n_fields; f++) {
        s.names[f] = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(fields, f), &s.sizes[f]);
        if (!s.names[f]) { PyBuffer_Release(&data); return NULL; }
    }
    static const char *named[] = {"frames", "filename", "line", "entries", "pg_config",
                                  "pg_status"};
    for (int k = 0; k < 6; k++) {
        s.names[s.n_fields + k] = named[k];
        s.sizes[s.n_fields + k] = (Py_ssize_t)strlen(named[k]);
        for (int f = 0; f < s.n_fields; f++)
            if (s.sizes[f] == s.sizes[s.n_fields + k] && !memcmp(s.names[f], named[k],
                                                                   (size_t)s.sizes[f])) {
                PyErr_Format(PyExc_ValueError, "a field is named %s", named[k]);
                PyBuffer_Release(&data);
                return NULL;
            }
    }
    PyObject *result = NULL, *ids = NULL;
    int r = -2;
    if (!(s.values = PyList_New(0))) goto done;
    if ((r = prescan(&s)) || (r = walk(&s))) goto done;
    r = 0;
    if (s.config_bad || s.status_bad || !(ids = rows(&s, &r))) {
        if (!r) r = -1;
        goto done;
    }
    result = PyTuple_Pack(4, s.values, ids, s.config ? s.config : Py_None,
                          s.status ? s.status : Py_None);
    r = result ? 0 : -2;
done:
    if (r == -1) {
        PyErr_Clear();
        Py_INCREF(Py_None);
        result = Py_None;
    }
    if (s.lists)
        for (Py_ssize_t i = 0; i < s.n_lists; i++) PyMem_Free(s.lists[i].items);
    Py_XDECREF(ids);
    Py_XDECREF(s.config);
    Py_XDECREF(s.status);
    Py_XDECREF(s.values);
    PyMem_Free(s.stack);
    PyMem_Free(s.marks);
    PyMem_Free(s.mark_at);
    PyMem_Free(s.put);
    PyMem_Free(s.got);
    PyMem_Free(s.rank);
    PyMem_Free(s.memo);
    PyMem_Free(s.dicts);
    PyMem_Free(s.lists);
    PyMem_Free(s.vals);
    PyMem_Free(s.table);
    PyMem_Free(s.pool);
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
