/* A profiler trace's collective events read from its bytes into columns
 * (order/_trace_events.py says which events are kept and how they are found).
 *
 * scan(data, event_keys, arg_keys, cut_when) finds the kept events as _trace_events._cut
 * does (the same markers, the same braces around them, the same GPU and gloo rules, the same
 * 1/cut_when bound) and parses each one, building no Python value: it returns
 * (count, ids, kinds, spans, integers, info, host), flat numbers the caller decodes.
 * - ids: int32, count rows of one column per key of event_keys (top-level fields) then of
 *   arg_keys (fields of "args"): the id of the event's value of that key, -1 where it lacks it.
 * - per id (the distinct texts of those values, numbered on first sight; equal texts share an
 *   id): kinds (int8: 0 a string without escapes, 1 an integer within int64, 2 another
 *   number, 3 true, false, null or a list), spans (int64 pairs: where its text starts and
 *   ends in data) and integers (int64: an integer's value, else 0).
 * - info and host: the (start, end) of the trace's "distributedInfo" and "host_name" values'
 *   text, or None when absent.
 * It returns None to decline: for any byte outside ASCII, a backslash or control character
 * in a kept event's string, an object inside a field, a number beyond int64 or not as JSON
 * writes it, NaN or Infinity, a kept event that does not parse to exactly its cut, one that
 * _trace_events._kept refuses, and wherever _cut declines. The caller then reads the text in
 * Python.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem, memrchr */
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define DECLINE (-1)
#define FAIL (-2)

typedef struct {
    const char *p;
    Py_ssize_t n;
} Text;

/* Python's str.isspace over ASCII: what \s and rstrip take. */
static int is_space(unsigned char c) {
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

static Py_ssize_t find(Text t, const char *needle, Py_ssize_t from) {
    size_t len = strlen(needle);
    if (from < 0 || from > t.n) return -1;
    const char *at = memmem(t.p + from, (size_t)(t.n - from), needle, len);
    return at ? at - t.p : -1;
}

static Py_ssize_t find_char(Text t, char c, Py_ssize_t from) {
    if (from < 0 || from >= t.n) return -1;
    const char *at = memchr(t.p + from, c, (size_t)(t.n - from));
    return at ? at - t.p : -1;
}

/* The last c in [0, before). */
static Py_ssize_t rfind_char(Text t, char c, Py_ssize_t before) {
    if (before <= 0) return -1;
    const char *at = memrchr(t.p, c, (size_t)before);
    return at ? at - t.p : -1;
}

/* The last needle starting in [from, before - len]. */
static Py_ssize_t rfind(Text t, const char *needle, Py_ssize_t from, Py_ssize_t before) {
    Py_ssize_t len = (Py_ssize_t)strlen(needle);
    for (Py_ssize_t at = before - len; at >= from; at--) {
        const char *hit = memrchr(t.p + from, needle[0], (size_t)(at + 1 - from));
        if (!hit) return -1;
        at = hit - t.p;
        if (memcmp(hit, needle, (size_t)len) == 0) return at;
    }
    return -1;
}

/* The distinct values of the kept events' keys, by their text: each is given an id on first
 * sight; equal texts share it. */
typedef struct {
    Py_ssize_t start, end; /* the value's text */
    int64_t integer;       /* an integer's value */
    char kind;
    uint64_t hash;
} Distinct;

enum { KIND_STRING = 0, KIND_INT = 1, KIND_FLOAT = 2, KIND_OTHER = 3 };

typedef struct {
    Distinct *items;
    Py_ssize_t count, cap;
    int32_t *slots; /* open addressing: id + 1, 0 when empty */
    Py_ssize_t nslots;
} Table;

static uint64_t hash_text(const char *p, Py_ssize_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
    return h;
}

static int grow_slots(Table *t) {
    Py_ssize_t n = t->nslots ? t->nslots * 2 : 1024;
    int32_t *slots = PyMem_Calloc((size_t)n, sizeof(int32_t));
    if (!slots) return FAIL;
    for (Py_ssize_t k = 0; k < t->count; k++) {
        Py_ssize_t at = (Py_ssize_t)(t->items[k].hash & (uint64_t)(n - 1));
        while (slots[at]) at = (at + 1) & (n - 1);
        slots[at] = (int32_t)(k + 1);
    }
    PyMem_Free(t->slots);
    t->slots = slots;
    t->nslots = n;
    return 0;
}

/* The id of the value [start, end) of base; -1 when out of memory or ids. */
static int32_t intern(Table *t, const char *base, Py_ssize_t start, Py_ssize_t end, char kind,
                      int64_t integer) {
    if (2 * (t->count + 1) > t->nslots && grow_slots(t)) return -1;
    uint64_t h = hash_text(base + start, end - start);
    Py_ssize_t at = (Py_ssize_t)(h & (uint64_t)(t->nslots - 1));
    while (t->slots[at]) {
        Distinct *d = &t->items[t->slots[at] - 1];
        if (d->hash == h && d->end - d->start == end - start &&
            memcmp(base + d->start, base + start, (size_t)(end - start)) == 0)
            return t->slots[at] - 1;
        at = (at + 1) & (t->nslots - 1);
    }
    if (t->count >= INT32_MAX - 1) return -1;
    if (t->count == t->cap) {
        Py_ssize_t grown = t->cap ? t->cap * 2 : 256;
        Distinct *more = PyMem_Realloc(t->items, (size_t)grown * sizeof(Distinct));
        if (!more) return -1;
        t->items = more;
        t->cap = grown;
    }
    t->items[t->count] = (Distinct){start, end, integer, kind, h};
    t->slots[at] = (int32_t)(t->count + 1);
    return (int32_t)t->count++;
}

/* The value parser over one cut event. */
typedef struct {
    Text t;
    Py_ssize_t at, end;
    Table *table;
} Parser;

static void skip_space(Parser *s) {
    while (s->at < s->end && (s->t.p[s->at] == ' ' || s->t.p[s->at] == '\t' ||
                              s->t.p[s->at] == '\n' || s->t.p[s->at] == '\r'))
        s->at++;
}

/* A string without escapes: its bytes [*start, *start + *len). */
static int string(Parser *s, Py_ssize_t *start, Py_ssize_t *len) {
    if (s->at >= s->end || s->t.p[s->at] != '"') return DECLINE;
    Py_ssize_t i = ++s->at;
    while (i < s->end && s->t.p[i] != '"') {
        unsigned char c = (unsigned char)s->t.p[i];
        if (c == '\\' || c < 0x20) return DECLINE;
        i++;
    }
    if (i >= s->end) return DECLINE;
    *start = s->at;
    *len = i - s->at;
    s->at = i + 1;
    return 0;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* A number as JSON writes it: an int within int64 (its value in *integer, unless NULL) or a
 * float. */
static int number(Parser *s, char *kind, int64_t *integer) {
    const char *p = s->t.p;
    Py_ssize_t i = s->at, digits = 0;
    int integral = 1;
    if (i < s->end && p[i] == '-') i++;
    if (i < s->end && p[i] == '0') { i++; digits = 1; }
    else while (i < s->end && is_digit(p[i])) { i++; digits++; }
    if (digits == 0) return DECLINE;
    if (i < s->end && p[i] == '.') {
        integral = 0;
        Py_ssize_t from = ++i;
        while (i < s->end && is_digit(p[i])) i++;
        if (i == from) return DECLINE;
    }
    if (i < s->end && (p[i] == 'e' || p[i] == 'E')) {
        integral = 0;
        i++;
        if (i < s->end && (p[i] == '+' || p[i] == '-')) i++;
        Py_ssize_t from = i;
        while (i < s->end && is_digit(p[i])) i++;
        if (i == from) return DECLINE;
    }
    if (i - s->at > 64 || (integral && digits > 18)) return DECLINE;
    *kind = integral ? KIND_INT : KIND_FLOAT;
    if (integral && integer) {
        char buffer[72];
        memcpy(buffer, p + s->at, (size_t)(i - s->at));
        buffer[i - s->at] = 0;
        *integer = strtoll(buffer, NULL, 10);
    }
    s->at = i;
    return 0;
}

static int word(Parser *s, const char *w) {
    size_t len = strlen(w);
    if ((size_t)(s->end - s->at) < len || memcmp(s->t.p + s->at, w, len) != 0) return DECLINE;
    s->at += (Py_ssize_t)len;
    return 0;
}

/* One value, checked and passed over: strings, numbers, true, false, null and lists of them
 * (an object declines: NaN, Infinity and objects inside an event's fields). *kind says what
 * it is and *integer (unless NULL: a value not kept) an integer's value. */
static int value(Parser *s, int depth, char *kind, int64_t *integer) {
    if (depth > 32 || s->at >= s->end) return DECLINE;
    char c = s->t.p[s->at];
    *kind = KIND_OTHER;
    if (integer) *integer = 0;
    if (c == '"') {
        Py_ssize_t start, len;
        *kind = KIND_STRING;
        return string(s, &start, &len) ? DECLINE : 0;
    }
    if (c == 't') return word(s, "true");
    if (c == 'f') return word(s, "false");
    if (c == 'n') return word(s, "null");
    if (c == '[') {
        char inner;
        s->at++;
        skip_space(s);
        if (s->at < s->end && s->t.p[s->at] == ']') { s->at++; return 0; }
        for (;;) {
            skip_space(s);
            if (value(s, depth + 1, &inner, NULL)) return DECLINE;
            skip_space(s);
            if (s->at < s->end && s->t.p[s->at] == ',') { s->at++; continue; }
            if (s->at < s->end && s->t.p[s->at] == ']') { s->at++; return 0; }
            return DECLINE;
        }
    }
    if (c == '-' || is_digit(c)) return number(s, kind, integer);
    return DECLINE;
}

/* The keys a scan reads, as C strings. */
typedef struct {
    const char **names;
    Py_ssize_t *lengths;
    Py_ssize_t count;
} Keys;

static int keys_of(PyObject *tuple, Keys *keys) {
    keys->count = PyTuple_GET_SIZE(tuple);
    keys->names = PyMem_Calloc((size_t)keys->count + 1, sizeof(char *));
    keys->lengths = PyMem_Calloc((size_t)keys->count + 1, sizeof(Py_ssize_t));
    if (!keys->names || !keys->lengths) return FAIL;
    for (Py_ssize_t k = 0; k < keys->count; k++) {
        PyObject *key = PyTuple_GET_ITEM(tuple, k);
        if (!PyUnicode_Check(key)) return DECLINE;
        keys->names[k] = PyUnicode_AsUTF8AndSize(key, &keys->lengths[k]);
        if (!keys->names[k]) return FAIL;
    }
    return 0;
}

static void keys_free(Keys *keys) {
    PyMem_Free((void *)keys->names);
    PyMem_Free(keys->lengths);
}

/* The index of the key [key, key + len) in keys, -1 when not there. */
static Py_ssize_t key_index(const char *key, Py_ssize_t len, const Keys *keys) {
    for (Py_ssize_t k = 0; k < keys->count; k++)
        if (keys->lengths[k] == len && memcmp(keys->names[k], key, (size_t)len) == 0) return k;
    return -1;
}

/* An object's fields: those named in keys get their value's id in slots (-1 where missing; a
 * repeated key's last value wins, as json does); with arg_keys, the field "args" must be an
 * object and its fields go to arg slots (each "args" resets them). */
static int object(Parser *s, const Keys *keys, int32_t *slots, const Keys *arg_keys,
                  int32_t *arg_slots, int *has_args) {
    if (s->at >= s->end || s->t.p[s->at] != '{') return DECLINE;
    s->at++;
    skip_space(s);
    if (s->at < s->end && s->t.p[s->at] == '}') { s->at++; return 0; }
    for (;;) {
        Py_ssize_t start, len;
        int r;
        skip_space(s);
        if (string(s, &start, &len)) return DECLINE;
        skip_space(s);
        if (s->at >= s->end || s->t.p[s->at] != ':') return DECLINE;
        s->at++;
        skip_space(s);
        const char *key = s->t.p + start;
        if (arg_keys && len == 4 && memcmp(key, "args", 4) == 0) {
            if (s->at >= s->end || s->t.p[s->at] != '{') return DECLINE;
            for (Py_ssize_t k = 0; k < arg_keys->count; k++) arg_slots[k] = -1;
            *has_args = 1;
            if ((r = object(s, arg_keys, arg_slots, NULL, NULL, NULL))) return r;
        } else {
            Py_ssize_t k = key_index(key, len, keys), from = s->at;
            char kind;
            int64_t integer = 0;
            if ((r = value(s, 0, &kind, k >= 0 ? &integer : NULL))) return r;
            if (k >= 0) {
                int32_t id = intern(s->table, s->t.p, from, s->at, kind, integer);
                if (id < 0) return FAIL;
                slots[k] = id;
            }
        }
        skip_space(s);
        if (s->at < s->end && s->t.p[s->at] == ',') { s->at++; continue; }
        if (s->at < s->end && s->t.p[s->at] == '}') { s->at++; return 0; }
        return DECLINE;
    }
}

/* The span of the value after the top-level key's last occurrence (_trace_events._field's
 * rules), [*from, *to); both -1 when absent. */
static int field_span(Text t, const char *quoted, Py_ssize_t after, Py_ssize_t before,
                      Py_ssize_t *from, Py_ssize_t *to) {
    Py_ssize_t at = rfind(t, quoted, after, t.n);
    if (at < 0) at = rfind(t, quoted, 0, before);
    *from = *to = -1;
    if (at < 0) return 0;
    Py_ssize_t colon = find_char(t, ':', at);
    if (colon < 0) return DECLINE;
    Py_ssize_t i = colon + 1;
    while (i < t.n && (t.p[i] == ' ' || t.p[i] == '\t' || t.p[i] == '\r' || t.p[i] == '\n')) i++;
    if (i >= t.n) return DECLINE;
    /* The value's extent: a string, a bracketed value (strings inside skipped), or a run of
     * the characters of numbers and words; json.loads then reads it or the caller declines. */
    Py_ssize_t j = i;
    char c = t.p[i];
    if (c == '"' || c == '{' || c == '[') {
        int level = 0;
        for (; j < t.n; j++) {
            char d = t.p[j];
            if (d == '"') {
                for (j++; j < t.n && t.p[j] != '"'; j++)
                    if (t.p[j] == '\\') j++;
                if (j >= t.n) return DECLINE;
                if (level == 0) break;
            } else if (d == '{' || d == '[') level++;
            else if (d == '}' || d == ']') {
                if (--level == 0) break;
            }
        }
        if (j >= t.n) return DECLINE;
        j++;
    } else {
        while (j < t.n && (is_digit(t.p[j]) || strchr("+-.eEabcdfilnrstuy", t.p[j]))) j++;
    }
    *from = i;
    *to = j;
    return 0;
}

typedef struct {
    Py_ssize_t start, end; /* the event's braces, end included */
    char kind;             /* 'l' gloo, 'g' GPU, 'c' a collective's CPU record */
} Span;

static int ascii_only(Text t) {
    const unsigned char *p = (const unsigned char *)t.p;
    Py_ssize_t i = 0;
    uint64_t any = 0;
    for (; i + 8 <= t.n; i += 8) {
        uint64_t word;
        memcpy(&word, p + i, 8);
        any |= word;
    }
    for (; i < t.n; i++) any |= p[i];
    return (any & 0x8080808080808080ULL) == 0;
}

/* The category of the event between start and args_open: the first "cat": "..." (without
 * backslash or quote inside), lowercased, is a GPU one. */
static int on_gpu(Text t, Py_ssize_t start, Py_ssize_t args_open) {
    Text region = {t.p, args_open};
    for (Py_ssize_t at = find(region, "\"cat\":", start); at >= 0;
         at = find(region, "\"cat\":", at + 1)) {
        Py_ssize_t i = at + 6;
        while (i < args_open && is_space((unsigned char)t.p[i])) i++;
        if (i >= args_open || t.p[i] != '"') continue;
        Py_ssize_t from = ++i;
        while (i < args_open && t.p[i] != '"' && t.p[i] != '\\') i++;
        if (i >= args_open || t.p[i] != '"') continue;
        Py_ssize_t len = i - from;
        static const char *gpu[] = {"kernel", "gpu_user_annotation"};
        for (int g = 0; g < 2; g++) {
            if ((Py_ssize_t)strlen(gpu[g]) != len) continue;
            int same = 1;
            for (Py_ssize_t k = 0; k < len && same; k++)
                same = Py_TOLOWER(t.p[from + k]) == gpu[g][k];
            if (same) return 1;
        }
        return 0;
    }
    return 0;
}

static int push(Span **spans, Py_ssize_t *count, Py_ssize_t *cap, Span span) {
    if (*count && (*spans)[*count - 1].start == span.start && (*spans)[*count - 1].end == span.end)
        return 0; /* one event, two markers */
    if (*count == *cap) {
        Py_ssize_t grown = *cap ? *cap * 2 : 256;
        Span *more = PyMem_Realloc(*spans, (size_t)grown * sizeof(Span));
        if (!more) return FAIL;
        *spans = more;
        *cap = grown;
    }
    (*spans)[(*count)++] = span;
    return 0;
}

/* The spans of the kept events, as _cut finds them. */
static int cut(Text t, Span **spans, Py_ssize_t *count) {
    Py_ssize_t cap = 0;
    static const char comms[] = "\"Collective name\"";
    static const char gloo[] = "\"gloo:";
    int r;
    for (Py_ssize_t at = find(t, comms, 0); at >= 0; at = find(t, comms, at + sizeof comms - 1)) {
        Py_ssize_t args_open = rfind_char(t, '{', at);
        if (args_open < 0) return DECLINE;
        Py_ssize_t start = rfind_char(t, '{', args_open);
        Py_ssize_t args_close = find_char(t, '}', args_open);
        if (start < 0 || args_close < 0) return DECLINE;
        Py_ssize_t end = find_char(t, '}', args_close + 1);
        if (end < 0) return DECLINE;
        Span span = {start, end, on_gpu(t, start, args_open) ? 'g' : 'c'};
        if ((r = push(spans, count, &cap, span))) return r;
    }
    if (*count == 0) {
        for (Py_ssize_t at = find(t, gloo, 0); at >= 0; at = find(t, gloo, at + sizeof gloo - 1)) {
            Py_ssize_t i = at, floor = at >= 64 ? at - 64 : 0;
            while (i > floor && is_space((unsigned char)t.p[i - 1])) i--;
            if (i - floor < 7 || memcmp(t.p + i - 7, "\"name\":", 7) != 0) continue;
            Py_ssize_t start = rfind_char(t, '{', at);
            Py_ssize_t args = find(t, "\"args\"", at);
            if (start < 0 || args < 0) return DECLINE;
            Py_ssize_t args_open = find_char(t, '{', args);
            if (args_open < 0) return DECLINE;
            Py_ssize_t args_close = find_char(t, '}', args_open);
            if (args_close < 0) return DECLINE;
            Py_ssize_t end = find_char(t, '}', args_close + 1);
            if (end < 0) return DECLINE;
            Span span = {start, end, 'l'};
            if ((r = push(spans, count, &cap, span))) return r;
        }
    }
    int any_gpu = 0;
    for (Py_ssize_t k = 0; k < *count; k++) any_gpu |= (*spans)[k].kind == 'g';
    if (any_gpu) {
        Py_ssize_t kept = 0;
        for (Py_ssize_t k = 0; k < *count; k++)
            if ((*spans)[k].kind != 'c') (*spans)[kept++] = (*spans)[k];
        *count = kept;
    }
    return 0;
}

static PyObject *span_or_none(Py_ssize_t from, Py_ssize_t to) {
    if (from < 0) Py_RETURN_NONE;
    return Py_BuildValue("(nn)", from, to);
}

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer data;
    PyObject *key_tuple, *arg_tuple;
    Py_ssize_t cut_when;
    if (!PyArg_ParseTuple(args, "y*O!O!n", &data, &PyTuple_Type, &key_tuple, &PyTuple_Type,
                          &arg_tuple, &cut_when))
        return NULL;
    Text t = {data.buf, data.len};
    Keys keys = {0}, arg_keys = {0};
    Table table = {0};
    Span *spans = NULL;
    PyObject *ids = NULL, *result = NULL;
    Py_ssize_t count = 0, width = 0;
    int r = keys_of(key_tuple, &keys);
    if (r || (r = keys_of(arg_tuple, &arg_keys))) goto done;
    width = keys.count + arg_keys.count;
    r = DECLINE;
    Py_ssize_t first = 0, last = t.n;
    while (first < t.n && is_space((unsigned char)t.p[first])) first++;
    while (last > first && is_space((unsigned char)t.p[last - 1])) last--;
    Py_ssize_t events_at = find(t, "\"traceEvents\"", 0);
    if (first >= t.n || t.p[first] != '{' || last <= first || t.p[last - 1] != '}' ||
        t.n - last > 4000 || events_at < 0 || !ascii_only(t))
        goto done;
    if ((r = cut(t, &spans, &count))) goto done;
    Py_ssize_t total = 0;
    for (Py_ssize_t k = 0; k < count; k++) total += spans[k].end + 1 - spans[k].start;
    r = DECLINE;
    if (cut_when * total >= t.n) goto done;
    Py_ssize_t name_k = key_index("name", 4, &keys), ph_k = key_index("ph", 2, &keys);
    Py_ssize_t comms_k = key_index("Collective name", 15, &arg_keys);
    if (name_k < 0 || ph_k < 0 || comms_k < 0) goto done;
    r = FAIL;
    if (!(ids = PyBytes_FromStringAndSize(NULL, count * width * (Py_ssize_t)sizeof(int32_t))))
        goto done;
    int32_t *slots = (int32_t *)PyBytes_AS_STRING(ids);
    for (Py_ssize_t e = 0; e < count; e++, slots += width) {
        Parser s = {t, spans[e].start, spans[e].end + 1, &table};
        int has_args = 0;
        for (Py_ssize_t k = 0; k < width; k++) slots[k] = -1;
        if ((r = object(&s, &keys, slots, &arg_keys, slots + keys.count, &has_args))) goto done;
        r = DECLINE;
        if (s.at != s.end || !has_args || slots[ph_k] < 0 || slots[name_k] < 0) goto done;
        Distinct *ph = &table.items[slots[ph_k]], *name = &table.items[slots[name_k]];
        if (ph->end - ph->start != 3 || memcmp(t.p + ph->start, "\"X\"", 3) != 0 ||
            name->kind != KIND_STRING)
            goto done;
        if (slots[keys.count + comms_k] < 0 &&
            (name->end - name->start < 6 || memcmp(t.p + name->start, "\"gloo:", 6) != 0))
            goto done;
    }
    Py_ssize_t after = count ? spans[count - 1].end + 1 : events_at;
    Py_ssize_t info_from, info_to, host_from, host_to;
    if ((r = field_span(t, "\"distributedInfo\"", after, events_at, &info_from, &info_to)) ||
        (r = field_span(t, "\"host_name\"", after, events_at, &host_from, &host_to)))
        goto done;
    r = FAIL;
    PyObject *kinds = PyBytes_FromStringAndSize(NULL, table.count);
    PyObject *bounds = PyBytes_FromStringAndSize(NULL, 2 * table.count * (Py_ssize_t)sizeof(int64_t));
    PyObject *integers = PyBytes_FromStringAndSize(NULL, table.count * (Py_ssize_t)sizeof(int64_t));
    if (kinds && bounds && integers) {
        char *kind = PyBytes_AS_STRING(kinds);
        int64_t *bound = (int64_t *)PyBytes_AS_STRING(bounds);
        int64_t *integer = (int64_t *)PyBytes_AS_STRING(integers);
        for (Py_ssize_t k = 0; k < table.count; k++) {
            kind[k] = table.items[k].kind;
            bound[2 * k] = table.items[k].start;
            bound[2 * k + 1] = table.items[k].end;
            integer[k] = table.items[k].integer;
        }
        PyObject *info = span_or_none(info_from, info_to);
        PyObject *host = span_or_none(host_from, host_to);
        if (info && host)
            result = Py_BuildValue("(nOOOOOO)", count, ids, kinds, bounds, integers, info, host);
        Py_XDECREF(info);
        Py_XDECREF(host);
    }
    Py_XDECREF(kinds);
    Py_XDECREF(bounds);
    Py_XDECREF(integers);
    r = result ? 0 : FAIL;
done:
    if (r == DECLINE) {
        PyErr_Clear();
        Py_INCREF(Py_None);
        result = Py_None;
    }
    keys_free(&keys);
    keys_free(&arg_keys);
    PyMem_Free(table.items);
    PyMem_Free(table.slots);
    PyMem_Free(spans);
    Py_XDECREF(ids);
    PyBuffer_Release(&data);
    if (r == FAIL && !PyErr_Occurred()) PyErr_NoMemory();
    return r == FAIL ? NULL : result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(data, event_keys, arg_keys, cut_when) -> (count, ids, kinds, spans, integers, info, "
     "host) or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_trace_scan", NULL, -1, methods};

PyMODINIT_FUNC PyInit__trace_scan(void) { return PyModule_Create(&module); }
