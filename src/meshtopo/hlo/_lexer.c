/* XLA's HLO tokenizer, compiled.
 *
 *   lex(text: str, pos: int, most: int = 0) -> (bytes, bytes, bytes)
 *       the tokens of text[pos:], the last one kEof at the end of the text (with ``most``
 *       > 0, the first ``most`` of them): their kinds (one byte each, TokKind's values) and
 *       their starts and ends (native int64).
 *   TABLE: the kinds, punctuation, keywords and primitive types this module was built with
 *       (a test checks them against _tokens.py).
 *
 * The kinds, one-character tokens, keywords and primitive types come from _tokens.h, which
 * _tokens.py writes; the rules are XLA's (hlo_lexer.cc) as _tokens.py states them, and
 * _pure_lexer.py, built from the same table, answers the same (a test compares them on
 * every text of a corpus and on generated ones). This module reads only the str it is
 * given and returns new bytes objects.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_tokens.h"

#define WORD_MAX 24  /* longer than every reserved word */
#define IS_DIGIT(c) ((c) >= '0' && (c) <= '9')
#define IS_ALPHA(c) (((c) >= 'a' && (c) <= 'z') || ((c) >= 'A' && (c) <= 'Z'))
#define IS_IDENTIFIER_CHAR(c) \
    (IS_ALPHA(c) || IS_DIGIT(c) || (c) == '_' || (c) == '.' || (c) == '-')
#define HEX_VALUE(c)                                 \
    (IS_DIGIT(c) ? (int)((c) - '0')                  \
     : ((c) >= 'a' && (c) <= 'f') ? (int)((c) - 'a' + 10) \
     : ((c) >= 'A' && (c) <= 'F') ? (int)((c) - 'A' + 10) : -1)

/* Characters after digits that may go on as a decimal, dim labels, DxD or padding. */
#define CONTINUES_NUMBER(c) \
    ((c) == '.' || (c) == 'e' || (c) == 'E' || (c) == '_' || (c) == 'x' || (c) == 'b' \
     || (c) == 'f' || (c) == '?')

/* Characters that make a one-character escape after a backslash (absl's CUnescape). */
static const unsigned char SIMPLE_ESCAPE[128] = {
    ['a'] = 1, ['b'] = 1, ['f'] = 1, ['n'] = 1, ['r'] = 1, ['t'] = 1, ['v'] = 1,
    ['\\'] = 1, ['?'] = 1, ['\''] = 1, ['"'] = 1,
};

/* The token columns being written, in bytes objects grown in place (no copy at the end). */
struct columns {
    PyObject *kinds_bytes, *starts_bytes, *ends_bytes;
    unsigned char *kinds;
    int64_t *starts;
    int64_t *ends;
    Py_ssize_t count;
    Py_ssize_t capacity;
};

/* Sets the columns' capacity to ``capacity`` tokens; -1 (a Python error set) on failure. */
static int
resize(struct columns *out, Py_ssize_t capacity)
{
    if (capacity > PY_SSIZE_T_MAX / (Py_ssize_t)sizeof(int64_t)) {
        PyErr_NoMemory();
        return -1;
    }
    if (_PyBytes_Resize(&out->kinds_bytes, capacity) < 0
            || _PyBytes_Resize(&out->starts_bytes, capacity * (Py_ssize_t)sizeof(int64_t)) < 0
            || _PyBytes_Resize(&out->ends_bytes, capacity * (Py_ssize_t)sizeof(int64_t)) < 0)
        return -1;
    out->kinds = (unsigned char *)PyBytes_AS_STRING(out->kinds_bytes);
    out->starts = (int64_t *)PyBytes_AS_STRING(out->starts_bytes);
    out->ends = (int64_t *)PyBytes_AS_STRING(out->ends_bytes);
    out->capacity = capacity;
    return 0;
}

static inline int
push(struct columns *out, int kind, Py_ssize_t start, Py_ssize_t end)
{
    if (out->count == out->capacity && resize(out, out->capacity * 2) < 0)
        return -1;
    out->kinds[out->count] = (unsigned char)kind;
    out->starts[out->count] = start;
    out->ends[out->count] = end;
    out->count++;
    return 0;
}

/* Every reserved word (primitive types, keywords, and nan, a kDecimal) with its length and
 * kind, filled in when the module is imported. */
#define WORD_COUNT (sizeof(PRIMITIVE_TYPES) / sizeof(PRIMITIVE_TYPES[0]) \
                    + sizeof(KEYWORDS) / sizeof(KEYWORDS[0]) + 1)
static struct { const char *word; size_t length; int kind; } WORDS[WORD_COUNT];

static void
fill_words(void)
{
    size_t k, at = 0;
    for (k = 0; k < sizeof(PRIMITIVE_TYPES) / sizeof(PRIMITIVE_TYPES[0]); k++, at++) {
        WORDS[at].word = PRIMITIVE_TYPES[k];
        WORDS[at].kind = kPrimitiveType;
    }
    for (k = 0; k < sizeof(KEYWORDS) / sizeof(KEYWORDS[0]); k++, at++) {
        WORDS[at].word = KEYWORDS[k].word;
        WORDS[at].kind = KEYWORDS[k].kind;
    }
    WORDS[at].word = "nan";
    WORDS[at].kind = kDecimal;
    for (k = 0; k < WORD_COUNT; k++)
        WORDS[k].length = strlen(WORDS[k].word);
}

/* The kind of a whole identifier that is no name or attribute name: a primitive type, a
 * keyword, kDecimal for nan, else kIdent (dim labels are decided by the caller). */
static int
word_kind(const char *word, Py_ssize_t length)
{
    size_t k;
    for (k = 0; k < WORD_COUNT; k++)
        if (WORDS[k].length == (size_t)length && WORDS[k].word[0] == word[0]
                && memcmp(word, WORDS[k].word, (size_t)length) == 0)
            return WORDS[k].kind;
    return kIdent;
}

#define SCAN_NAME(name) ucs1_##name
#define SCAN scan_ucs1
#define CHAR_T Py_UCS1
#include "_lexer_scan.h"
#undef SCAN_NAME
#undef SCAN
#undef CHAR_T

#define SCAN_NAME(name) ucs2_##name
#define SCAN scan_ucs2
#define CHAR_T Py_UCS2
#include "_lexer_scan.h"
#undef SCAN_NAME
#undef SCAN
#undef CHAR_T

#define SCAN_NAME(name) ucs4_##name
#define SCAN scan_ucs4
#define CHAR_T Py_UCS4
#include "_lexer_scan.h"
#undef SCAN_NAME
#undef SCAN
#undef CHAR_T

static PyObject *
lex(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *text, *result = NULL;
    Py_ssize_t pos, n;
    struct columns out = {NULL, NULL, NULL, NULL, NULL, NULL, 0, 0};
    int failed;
    Py_ssize_t most = 0;
    if (nargs < 2 || nargs > 3 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "lex(text: str, pos: int, most: int = 0)");
        return NULL;
    }
    text = args[0];
    pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred())
        return NULL;
    if (nargs == 3) {
        most = PyLong_AsSsize_t(args[2]);
        if (most == -1 && PyErr_Occurred())
            return NULL;
    }
    n = PyUnicode_GET_LENGTH(text);
    if (pos < 0 || pos > n) {
        PyErr_SetString(PyExc_ValueError, "lex: pos is outside the text");
        return NULL;
    }
    out.kinds_bytes = PyBytes_FromStringAndSize(NULL, 0);
    out.starts_bytes = PyBytes_FromStringAndSize(NULL, 0);
    out.ends_bytes = PyBytes_FromStringAndSize(NULL, 0);
    /* About one token in four characters of a dump; doubled when more come. */
    if (out.kinds_bytes == NULL || out.starts_bytes == NULL || out.ends_bytes == NULL
            || resize(&out, most > 0 && most < (n - pos) / 4 + 16 ? most
                      : (n - pos) / 4 + 16) < 0)
        goto done;
    switch (PyUnicode_KIND(text)) {
    case PyUnicode_1BYTE_KIND:
        failed = scan_ucs1(PyUnicode_1BYTE_DATA(text), pos, n, &out, most);
        break;
    case PyUnicode_2BYTE_KIND:
        failed = scan_ucs2(PyUnicode_2BYTE_DATA(text), pos, n, &out, most);
        break;
    default:
        failed = scan_ucs4(PyUnicode_4BYTE_DATA(text), pos, n, &out, most);
        break;
    }
    if (failed || resize(&out, out.count) < 0)
        goto done;
    result = PyTuple_Pack(3, out.kinds_bytes, out.starts_bytes, out.ends_bytes);
done:
    Py_XDECREF(out.kinds_bytes);
    Py_XDECREF(out.starts_bytes);
    Py_XDECREF(out.ends_bytes);
    return result;
}

/* TABLE: {"kinds": (name, ...), "punctuation": {char: kind}, "keywords": {word: kind},
 * "primitive_types": (word, ...), "nan_payload_max": int}, as compiled in. */
static PyObject *
table(void)
{
    PyObject *kinds = PyTuple_New(TOK_KIND_COUNT), *punctuation = PyDict_New();
    PyObject *keywords = PyDict_New(), *types = NULL, *result = NULL;
    size_t k, count = sizeof(PRIMITIVE_TYPES) / sizeof(PRIMITIVE_TYPES[0]);
    if (kinds == NULL || punctuation == NULL || keywords == NULL)
        goto done;
    for (k = 0; k < TOK_KIND_COUNT; k++) {
        PyObject *name = PyUnicode_FromString(TOK_KIND_NAMES[k]);
        if (name == NULL)
            goto done;
        PyTuple_SET_ITEM(kinds, (Py_ssize_t)k, name);
    }
    for (k = 0; k < 128; k++) {
        if (SINGLE_CHAR_KIND[k]) {
            char key[2] = {(char)k, 0};
            PyObject *kind = PyLong_FromLong(SINGLE_CHAR_KIND[k]);
            int failed = kind == NULL || PyDict_SetItemString(punctuation, key, kind) < 0;
            Py_XDECREF(kind);
            if (failed)
                goto done;
        }
    }
    for (k = 0; k < sizeof(KEYWORDS) / sizeof(KEYWORDS[0]); k++) {
        PyObject *kind = PyLong_FromLong(KEYWORDS[k].kind);
        int failed = kind == NULL || PyDict_SetItemString(keywords, KEYWORDS[k].word, kind) < 0;
        Py_XDECREF(kind);
        if (failed)
            goto done;
    }
    if ((types = PyTuple_New((Py_ssize_t)count)) == NULL)
        goto done;
    for (k = 0; k < count; k++) {
        PyObject *word = PyUnicode_FromString(PRIMITIVE_TYPES[k]);
        if (word == NULL)
            goto done;
        PyTuple_SET_ITEM(types, (Py_ssize_t)k, word);
    }
    result = Py_BuildValue("{sOsOsOsOsK}", "kinds", kinds, "punctuation", punctuation,
                           "keywords", keywords, "primitive_types", types, "nan_payload_max",
                           (unsigned long long)NAN_PAYLOAD_MAX);
done:
    Py_XDECREF(kinds);
    Py_XDECREF(punctuation);
    Py_XDECREF(keywords);
    Py_XDECREF(types);
    return result;
}

static PyMethodDef methods[] = {
    {"lex", (PyCFunction)(void (*)(void))lex, METH_FASTCALL,
     "lex(text, pos, /): the tokens of text[pos:] as (kinds, starts, ends) bytes."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef lexer_module = {
    PyModuleDef_HEAD_INIT, "_lexer", "XLA's HLO tokenizer, compiled.", -1, methods,
};

PyMODINIT_FUNC
PyInit__lexer(void)
{
    PyObject *module = PyModule_Create(&lexer_module), *value;
    fill_words();
    if (module == NULL)
        return NULL;
    value = table();
    if (value == NULL || PyModule_AddObject(module, "TABLE", value) < 0) {
        Py_XDECREF(value);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
