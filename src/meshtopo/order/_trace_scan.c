/* A profiler trace's collective events read from its bytes into columns
 * (order/_trace_events.py says which events are kept and how they are found).
 *
 * scan(data, event_keys, arg_keys, cut_when, absent) finds the kept events as
 * _trace_events._cut does (the same markers, the same braces around them, the same GPU and
 * gloo rules, the same 1/cut_when bound) and parses each one, building only the values of
 * event_keys (top-level fields) and arg_keys (fields of "args"). It returns (columns, info,
 * host): one list per key, in that order, of each kept event's value (`absent` where the
 * event lacks the key), and the text of the trace's "distributedInfo" and "host_name" values
 * (None when absent) for json.loads. It returns None to decline: for any byte outside ASCII,
 * a backslash or control character in a kept event's string, a number beyond int64 or not as
 * JSON writes it, NaN or Infinity, a kept event that does not parse to exactly its cut, one
 * that _trace_events._kept refuses, and wherever _cut declines. The caller then reads the
 * text in Python.
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

/* The value parser over one cut event. */
typedef struct {
    Text t;
    Py_ssize_t at, end;
    PyObject *absent;
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

/* A number as JSON writes it: an int within int64 or a float. */
static int number(Parser *s, PyObject **out) {
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
    if (out) {
        char buffer[72];
        memcpy(buffer, p + s->at, (size_t)(i - s->at));
        buffer[i - s->at] = 0;
        if (integral) *out = PyLong_FromLongLong(strtoll(buffer, NULL, 10));
        else {
            double value = PyOS_string_to_double(buffer, NULL, NULL);
            if (value == -1.0 && PyErr_Occurred()) return FAIL;
            *out = PyFloat_FromDouble(value);
        }
        if (!*out) return FAIL;
    }
    s->at = i;
    return 0;
}

static int word(Parser *s, const char *w, PyObject *value, PyObject **out) {
    size_t len = strlen(w);
    if ((size_t)(s->end - s->at) < len || memcmp(s->t.p + s->at, w, len) != 0) return DECLINE;
    s->at += (Py_ssize_t)len;
    if (out) { Py_INCREF(value); *out = value; }
    return 0;
}

/* One value (built into *out when out is not NULL): strings, numbers, true, false, null and
 * lists of them; an object only where depth allows skipping it (never built). */
static int value(Parser *s, PyObject **out, int depth) {
    if (depth > 32 || s->at >= s->end) return DECLINE;
    char c = s->t.p[s->at];
    if (c == '"') {
        Py_ssize_t start, len;
        if (string(s, &start, &len)) return DECLINE;
        if (out && !(*out = PyUnicode_DecodeASCII(s->t.p + start, len, NULL))) return FAIL;
        return 0;
    }
    if (c == 't') return word(s, "true", Py_True, out);
    if (c == 'f') return word(s, "false", Py_False, out);
    if (c == 'n') return word(s, "null", Py_None, out);
    if (c == '[') {
        PyObject *list = NULL;
        int r;
        if (out && !(list = PyList_New(0))) return FAIL;
        s->at++;
        skip_space(s);
        if (s->at < s->end && s->t.p[s->at] == ']') { s->at++; goto done; }
        for (;;) {
            PyObject *item = NULL;
            skip_space(s);
            if ((r = value(s, list ? &item : NULL, depth + 1))) { Py_XDECREF(list); return r; }
            if (list) {
                r = PyList_Append(list, item);
                Py_DECREF(item);
                if (r) { Py_DECREF(list); return FAIL; }
            }
            skip_space(s);
            if (s->at < s->end && s->t.p[s->at] == ',') { s->at++; continue; }
            if (s->at < s->end && s->t.p[s->at] == ']') { s->at++; break; }
            Py_XDECREF(list);
            return DECLINE;
        }
    done:
        if (out) *out = list;
        return 0;
    }
    if (c == '-' || is_digit(c)) return number(s, out);
    return DECLINE; /* objects inside an event's fields, NaN, Infinity */
}

/* The index of the key [start, start + len) in keys, -1 when not there. */
static Py_ssize_t key_index(const char *key, Py_ssize_t len, PyObject *keys) {
    Py_ssize_t n = PyTuple_GET_SIZE(keys);
    for (Py_ssize_t k = 0; k < n; k++) {
        Py_ssize_t klen;
        const char *name = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(keys, k), &klen);
        if (name && klen == len && memcmp(name, key, (size_t)len) == 0) return k;
    }
    return -1;
}

/* An object's fields: those named in keys built into slots (absent where missing; a repeated
 * key's last value wins, as json does); with args_slot >= 0, the field "args" must be an
 * object and its fields go to arg slots. */
static int object(Parser *s, PyObject *keys, PyObject **slots, PyObject *arg_keys,
                  PyObject **arg_slots, int *has_args) {
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
            Py_ssize_t n = PyTuple_GET_SIZE(arg_keys);
            if (s->at >= s->end || s->t.p[s->at] != '{') return DECLINE;
            for (Py_ssize_t k = 0; k < n; k++) {
                Py_INCREF(s->absent);
                Py_SETREF(arg_slots[k], s->absent);
            }
            *has_args = 1;
            if ((r = object(s, arg_keys, arg_slots, NULL, NULL, NULL))) return r;
        } else {
            Py_ssize_t k = key_index(key, len, keys);
            PyObject *built = NULL;
            if ((r = value(s, k >= 0 ? &built : NULL, 0))) return r;
            if (k >= 0) Py_SETREF(slots[k], built);
        }
        skip_space(s);
        if (s->at < s->end && s->t.p[s->at] == ',') { s->at++; continue; }
        if (s->at < s->end && s->t.p[s->at] == '}') { s->at++; return 0; }
        return DECLINE;
    }
}

/* The value after the top-level key's last occurrence (_trace_events._field's rules), as its
 * text; None when absent. */
static int field_text(Text t, const char *quoted, Py_ssize_t after, Py_ssize_t before,
                      PyObject **out) {
    Py_ssize_t at = rfind(t, quoted, after, t.n);
    if (at < 0) at = rfind(t, quoted, 0, before);
    if (at < 0) { Py_INCREF(Py_None); *out = Py_None; return 0; }
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
    if (!(*out = PyBytes_FromStringAndSize(t.p + i, j - i))) return FAIL;
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

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer data;
    PyObject *keys, *arg_keys, *absent;
    Py_ssize_t cut_when;
    if (!PyArg_ParseTuple(args, "y*O!O!nO", &data, &PyTuple_Type, &keys, &PyTuple_Type,
                          &arg_keys, &cut_when, &absent))
        return NULL;
    Text t = {data.buf, data.len};
    Py_ssize_t nkeys = PyTuple_GET_SIZE(keys), nargs = PyTuple_GET_SIZE(arg_keys);
    Py_ssize_t width = nkeys + nargs, count = 0;
    Span *spans = NULL;
    PyObject *columns = NULL, *info = NULL, *host = NULL, *result = NULL;
    PyObject **slots = NULL;
    int r = DECLINE;
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
    r = FAIL;
    if (!(columns = PyList_New(width))) goto done;
    for (Py_ssize_t k = 0; k < width; k++) {
        PyObject *column = PyList_New(count);
        if (!column) goto done;
        PyList_SET_ITEM(columns, k, column);
    }
    if (!(slots = PyMem_Calloc((size_t)width, sizeof(PyObject *)))) goto done;
    Py_ssize_t name_k = key_index("name", 4, keys), ph_k = key_index("ph", 2, keys);
    Py_ssize_t comms_k = key_index("Collective name", 15, arg_keys);
    r = DECLINE;
    if (name_k < 0 || ph_k < 0 || comms_k < 0) goto done;
    for (Py_ssize_t e = 0; e < count; e++) {
        Parser s = {t, spans[e].start, spans[e].end + 1, absent};
        int has_args = 0;
        for (Py_ssize_t k = 0; k < width; k++) {
            Py_INCREF(absent);
            Py_XSETREF(slots[k], absent);
        }
        if ((r = object(&s, keys, slots, arg_keys, slots + nkeys, &has_args))) goto done;
        r = DECLINE;
        if (s.at != s.end || !has_args) goto done;
        PyObject *ph = slots[ph_k], *name = slots[name_k];
        if (!PyUnicode_Check(ph) || PyUnicode_GET_LENGTH(ph) != 1 ||
            PyUnicode_READ_CHAR(ph, 0) != 'X' || !PyUnicode_Check(name))
            goto done;
        if (slots[nkeys + comms_k] == absent) {
            Py_ssize_t len;
            const char *text = PyUnicode_AsUTF8AndSize(name, &len);
            if (!text || len < 5 || memcmp(text, "gloo:", 5) != 0) goto done;
        }
        for (Py_ssize_t k = 0; k < width; k++) {
            PyList_SET_ITEM(PyList_GET_ITEM(columns, k), e, slots[k]);
            slots[k] = NULL;
        }
    }
    Py_ssize_t after = count ? spans[count - 1].end + 1 : events_at;
    if ((r = field_text(t, "\"distributedInfo\"", after, events_at, &info))) goto done;
    if ((r = field_text(t, "\"host_name\"", after, events_at, &host))) goto done;
    result = PyTuple_Pack(3, columns, info, host);
    r = result ? 0 : FAIL;
done:
    if (r == DECLINE) {
        PyErr_Clear();
        Py_INCREF(Py_None);
        result = Py_None;
    }
    if (slots)
        for (Py_ssize_t k = 0; k < width; k++) Py_XDECREF(slots[k]);
    PyMem_Free(slots);
    PyMem_Free(spans);
    Py_XDECREF(columns);
    Py_XDECREF(info);
    Py_XDECREF(host);
    PyBuffer_Release(&data);
    if (r == FAIL && !PyErr_Occurred()) PyErr_NoMemory();
    return r == FAIL ? NULL : result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(data, event_keys, arg_keys, cut_when, absent) -> (columns, info, host) or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_trace_scan", NULL, -1, methods};

PyMODINIT_FUNC PyInit__trace_scan(void) { return PyModule_Create(&module); }
