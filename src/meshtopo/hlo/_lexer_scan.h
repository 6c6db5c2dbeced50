/* The tokenizer's loop over one width of Python string characters.
 *
 * Included by _lexer.c once per width with CHAR_T (Py_UCS1, Py_UCS2 or Py_UCS4) and SCAN
 * (the function's name) defined. Every token rule here is XLA's (hlo_lexer.cc), as the
 * table in _tokens.py states it; its regular expressions are written out as the first match
 * a backtracking engine finds, which is RE2's answer for them (see _lexer.c).
 */

/* Digits from p on: the offset of the first non-digit. */
static inline Py_ssize_t
SCAN_NAME(digits)(const CHAR_T *s, Py_ssize_t p, Py_ssize_t n)
{
    while (p < n && IS_DIGIT(s[p]))
        p++;
    return p;
}

/* [eE][+-]?[0-9]+ at p: its end, or -1. */
static inline Py_ssize_t
SCAN_NAME(exponent)(const CHAR_T *s, Py_ssize_t p, Py_ssize_t n)
{
    if (p >= n || (s[p] != 'e' && s[p] != 'E'))
        return -1;
    p++;
    if (p < n && (s[p] == '+' || s[p] == '-'))
        p++;
    if (p >= n || !IS_DIGIT(s[p]))
        return -1;
    return SCAN_NAME(digits)(s, p, n);
}

/* FLOAT at i: its end, or -1. */
static Py_ssize_t
SCAN_NAME(float)(const CHAR_T *s, Py_ssize_t i, Py_ssize_t n)
{
    Py_ssize_t p = i < n && s[i] == '-' ? i + 1 : i;
    Py_ssize_t a = SCAN_NAME(digits)(s, p, n), b, e;
    int dot = a < n && s[a] == '.';
    int fraction = dot && a + 1 < n && IS_DIGIT(s[a + 1]);
    if (a > p && (e = SCAN_NAME(exponent)(s, a, n)) >= 0)
        return e;
    if (dot && (a > p || fraction)) {
        b = SCAN_NAME(digits)(s, a + 1, n);
        if ((e = SCAN_NAME(exponent)(s, b, n)) >= 0)
            return e;
        return b;
    }
    return -1;
}

/* A run of at least two characters of one class from p: its end, or -1. */
#define SCAN_RUN(test)                                  \
    do {                                                \
        Py_ssize_t from_ = p;                           \
        while (p < n && (test))                         \
            p++;                                        \
        if (p - from_ < 2)                              \
            return -1;                                  \
    } while (0)

/* DIM_LABELS at p: its end, or -1. */
static Py_ssize_t
SCAN_NAME(dim_labels)(const CHAR_T *s, Py_ssize_t p, Py_ssize_t n)
{
    SCAN_RUN(IS_DIGIT(s[p]) || s[p] == 'b' || s[p] == 'f' || s[p] == '?');
    if (p >= n || s[p] != '_')
        return -1;
    p++;
    SCAN_RUN(IS_DIGIT(s[p]) || s[p] == 'i' || s[p] == 'o' || s[p] == '?');
    if (p + 1 >= n || s[p] != '-' || s[p + 1] != '>')
        return -1;
    p += 2;
    SCAN_RUN(IS_DIGIT(s[p]) || s[p] == 'b' || s[p] == 'f' || s[p] == '?');
    return p;
}

/* DXD at p: its end, or -1. */
static Py_ssize_t
SCAN_NAME(dxd)(const CHAR_T *s, Py_ssize_t p, Py_ssize_t n)
{
    Py_ssize_t end = -1, q = SCAN_NAME(digits)(s, p, n);
    if (q == p)
        return -1;
    while (q + 1 < n && s[q] == 'x' && IS_DIGIT(s[q + 1]))
        end = q = SCAN_NAME(digits)(s, q + 1, n);
    return end;
}

/* One of PAD's units, -?[0-9]+_-?[0-9]+(_[0-9]+)?, at p: its end, or -1. */
static Py_ssize_t
SCAN_NAME(pad_unit)(const CHAR_T *s, Py_ssize_t p, Py_ssize_t n)
{
    Py_ssize_t q;
    if (p < n && s[p] == '-')
        p++;
    if ((q = SCAN_NAME(digits)(s, p, n)) == p || q >= n || s[q] != '_')
        return -1;
    p = q + 1;
    if (p < n && s[p] == '-')
        p++;
    if ((q = SCAN_NAME(digits)(s, p, n)) == p)
        return -1;
    if (q + 1 < n && s[q] == '_' && IS_DIGIT(s[q + 1]))
        q = SCAN_NAME(digits)(s, q + 1, n);
    return q;
}

/* PAD at p: its end, or -1. */
static Py_ssize_t
SCAN_NAME(pad)(const CHAR_T *s, Py_ssize_t p, Py_ssize_t n)
{
    Py_ssize_t end = SCAN_NAME(pad_unit)(s, p, n), next;
    if (end < 0)
        return -1;
    while (end < n && s[end] == 'x' && (next = SCAN_NAME(pad_unit)(s, end + 1, n)) >= 0)
        end = next;
    return end;
}

/* A NaN's payload (0x...) at p, where a '(' is: its end, or -1 when it is no valid one. */
static Py_ssize_t
SCAN_NAME(nan_payload)(const CHAR_T *s, Py_ssize_t p, Py_ssize_t n)
{
    uint64_t value = 0;
    Py_ssize_t q = p + 3;
    int digit;
    if (p + 3 >= n || s[p + 1] != '0' || s[p + 2] != 'x' || HEX_VALUE(s[q]) < 0)
        return -1;
    for (; q < n && (digit = HEX_VALUE(s[q])) >= 0; q++)
        if (value <= NAN_PAYLOAD_MAX)  /* past it, the payload is out of range whatever follows */
            value = (value << 4) + (uint64_t)digit;
    if (q >= n || s[q] != ')' || value == 0 || value > NAN_PAYLOAD_MAX)
        return -1;
    return q + 1;
}

/* Whether absl's CUnescape accepts the escapes of s[p:end] (a string's inside). */
static int
SCAN_NAME(unescapes)(const CHAR_T *s, Py_ssize_t p, Py_ssize_t end)
{
    for (; p < end; p++) {
        Py_UCS4 c;
        if (s[p] != '\\')
            continue;
        if (++p >= end)
            return 0;
        c = s[p];
        if (c < 128 && SIMPLE_ESCAPE[c])
            continue;
        if (c >= '0' && c <= '7') {
            unsigned value = c - '0';
            int more;
            for (more = 0; more < 2 && p < end - 1 && s[p + 1] >= '0' && s[p + 1] <= '7'; more++)
                value = value * 8 + (unsigned)(s[++p] - '0');
            if (value > 0xFF)
                return 0;
        } else if (c == 'x' || c == 'X') {
            unsigned value = 0;
            if (p >= end - 1 || HEX_VALUE(s[p + 1]) < 0)
                return 0;
            while (p < end - 1 && HEX_VALUE(s[p + 1]) >= 0) {
                p++;
                value = (value << 4) + (unsigned)HEX_VALUE(s[p]);
            }
            if (value > 0xFF)
                return 0;
        } else if (c == 'u' || c == 'U') {
            int count = c == 'u' ? 4 : 8, k;
            uint32_t rune = 0;
            if (p + count >= end)
                return 0;
            for (k = 0; k < count; k++) {
                if (HEX_VALUE(s[p + 1]) < 0)
                    return 0;
                p++;
                rune = (rune << 4) + (uint32_t)HEX_VALUE(s[p]);
                if (rune > 0x10FFFF)
                    return 0;
            }
            if (rune >= 0xD800 && rune <= 0xDFFF)
                return 0;
        } else {
            return 0;
        }
    }
    return 1;
}

/* The kind of the word s[i:j] (an identifier not followed by ':' or '='), with *end set
 * where the token ends (a NaN's payload or dim labels may move it). */
static int
SCAN_NAME(word)(const CHAR_T *s, Py_ssize_t i, Py_ssize_t j, Py_ssize_t n, Py_ssize_t *end)
{
    char word[WORD_MAX + 1];
    Py_ssize_t length = j - i, at;
    int k;
    *end = j;
    if (length <= WORD_MAX) {
        for (at = 0; at < length; at++)
            word[at] = (char)s[i + at];
        word[length] = '\0';
        k = word_kind(word, length);
        if (k == kDecimal && j < n && s[j] == '(') {  /* nan(0x...) */
            Py_ssize_t payload = SCAN_NAME(nan_payload)(s, j, n);
            if (payload < 0)
                return kError;
            *end = payload;
        }
        if (k != kIdent)
            return k;
    }
    if (s[i] == 'b' || s[i] == 'f') {
        Py_ssize_t labels = SCAN_NAME(dim_labels)(s, i, n);
        if (labels >= 0) {
            *end = labels;
            return kDimLabels;
        }
    }
    return kIdent;
}

/* A token starting with [0-9?-] (LexNumberOrPattern): its kind, *end and *resume set. */
static int
SCAN_NAME(number)(const CHAR_T *s, Py_ssize_t i, Py_ssize_t n, Py_ssize_t *end,
                  Py_ssize_t *resume)
{
    Py_ssize_t e, p;
    Py_UCS4 c = s[i];
    if (c == '-' && i + 1 < n && s[i + 1] == '>') {
        *end = *resume = i + 2;
        return kArrow;
    }
    p = c == '-' ? i + 1 : i;
    e = SCAN_NAME(digits)(s, p, n);
    if (e > p && e - p < 19 && (e >= n || !CONTINUES_NUMBER(s[e]))) {
        /* Digits no other rule can go on from, too few to overflow: a kInt. */
        *end = *resume = e;
        return kInt;
    }
    if (c != '?' && (e = SCAN_NAME(float)(s, i, n)) >= 0) {
        *end = *resume = e;
        return kDecimal;
    }
    if (c != '-' && (e = SCAN_NAME(dim_labels)(s, i, n)) >= 0) {
        *end = *resume = e;
        return kDimLabels;
    }
    if (c != '?' && (e = SCAN_NAME(dxd)(s, i, n)) >= 0) {
        *end = *resume = e;
        return kDxD;
    }
    if (c != '?' && (e = SCAN_NAME(pad)(s, i, n)) >= 0) {
        *end = *resume = e;
        return kPad;
    }
    p = c == '-' ? i + 1 : i;
    if (p < n && IS_DIGIT(s[p])) {  /* LexInt64Impl */
        int overflow = 0;
        if (c == '-') {
            int64_t value = 0;
            for (; p < n && IS_DIGIT(s[p]); p++) {
                int64_t digit = (int64_t)(s[p] - '0');
                if (value < INT64_MIN / 10 || value * 10 < INT64_MIN + digit) {
                    overflow = 1;
                    break;
                }
                value = value * 10 - digit;
            }
        } else {
            uint64_t value = 0;
            for (; p < n && IS_DIGIT(s[p]); p++) {
                uint64_t digit = (uint64_t)(s[p] - '0');
                if (value > UINT64_MAX / 10 || value * 10 > UINT64_MAX - digit) {
                    overflow = 1;
                    break;
                }
                value = value * 10 + digit;
            }
        }
        if (!overflow) {
            *end = *resume = p;
            return kInt;
        }
    }
    if (c == '-' && i + 3 < n && s[i + 1] == 'i' && s[i + 2] == 'n' && s[i + 3] == 'f') {
        *end = *resume = i + 4;
        return kNegInf;
    }
    if (c == '-' && i + 3 < n && s[i + 1] == 'n' && s[i + 2] == 'a' && s[i + 3] == 'n') {
        *end = *resume = i + 4;
        if (i + 4 < n && s[i + 4] == '(') {
            Py_ssize_t payload = SCAN_NAME(nan_payload)(s, i + 4, n);
            if (payload < 0)
                return kError;
            *end = *resume = payload;
        }
        return kDecimal;
    }
    *end = *resume = i + 1;
    return c == '?' ? kQuestionMark : kError;
}

/* Every token of s[pos:n] into out, or the first ``most`` when ``most`` > 0; -1 (a Python
 * error set) when memory runs out. */
static int
SCAN(const CHAR_T *s, Py_ssize_t pos, Py_ssize_t n, struct columns *out, Py_ssize_t most)
{
    Py_ssize_t i = pos;
    for (;;) {
        Py_ssize_t start, end, resume;
        int kind;
        Py_UCS4 c;
        /* White space and comments. */
        for (;;) {
            while (i < n && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r'))
                i++;
            if (i + 1 >= n || s[i] != '/' || (s[i + 1] != '*' && s[i + 1] != '/'))
                break;
            if (s[i + 1] == '*') {
                Py_ssize_t j = i + 2;
                while (j < n && s[j] != 0 && !(s[j] == '*' && j + 1 < n && s[j + 1] == '/'))
                    j++;
                if (j >= n || s[j] == 0)
                    break;  /* unterminated, or a NUL inside: an error token below */
                i = j + 2;
            } else {
                Py_ssize_t j = i + 2;
                while (j < n && s[j] != '\n' && s[j] != '\r' && s[j] != 0)
                    j++;
                if (j < n && s[j] == 0)
                    break;
                i = j;
            }
        }
        start = i;
        if (i >= n) {
            if (push(out, kEof, i, i) < 0)
                return -1;
            return 0;
        }
        c = s[i];
        if (IS_ALPHA(c) || c == '_') {
            Py_ssize_t j = i + 1;
            while (j < n && IS_IDENTIFIER_CHAR(s[j]))
                j++;
            if (j < n && (s[j] == ':' || s[j] == '=')) {
                kind = s[j] == ':' ? kName : kAttributeName;
                end = resume = j + 1;
            } else {
                kind = SCAN_NAME(word)(s, i, j, n, &end);
                resume = end;
            }
        } else if (IS_DIGIT(c) || c == '-' || c == '?') {
            kind = SCAN_NAME(number)(s, i, n, &end, &resume);
        } else if (c < 128 && SINGLE_CHAR_KIND[c]) {
            kind = SINGLE_CHAR_KIND[c];
            end = resume = i + 1;
        } else if (c == '%') {
            Py_ssize_t j = i + 1;
            if (j < n && (IS_ALPHA(s[j]) || s[j] == '_')) {
                for (j++; j < n && IS_IDENTIFIER_CHAR(s[j]); j++)
                    ;
                kind = kName;
                end = resume = j;
            } else {
                kind = kError;
                end = resume = i + 1;
            }
        } else if (c == '"' || c == '\'') {
            Py_ssize_t j = i + 1;
            int closed = 0;
            while (j < n) {
                if (s[j] == c) {
                    closed = 1;
                    break;
                }
                if (s[j] == '\\') {
                    if (j + 1 >= n || s[j + 1] == '\n')
                        break;
                    j += 2;
                } else {
                    j++;
                }
            }
            if (closed) {
                kind = SCAN_NAME(unescapes)(s, i + 1, j) ? kString : kError;
                end = resume = j + 1;
            } else {
                kind = kError;
                end = resume = i + 1;
            }
        } else if (c == '<' && i + 1 < n && s[i + 1] == '=') {
            kind = kLeq;
            end = resume = i + 2;
        } else if (c == '.' && i + 1 < n && s[i + 1] == '.') {
            int dots = i + 2 < n && s[i + 2] == '.';
            kind = dots ? kDots : kError;
            end = resume = i + (dots ? 3 : 2);
        } else if (c == '/' && i + 1 < n && (s[i + 1] == '*' || s[i + 1] == '/')) {
            /* A comment the loop above stopped at: a NUL inside, or a '/ *' never closed. */
            Py_ssize_t j = i + 2;
            while (j < n && s[j] != 0 && (s[i + 1] == '*' || (s[j] != '\n' && s[j] != '\r')))
                j++;
            kind = kError;
            end = resume = j < n && s[j] == 0 ? j : i + 1;
        } else {
            kind = kError;
            end = resume = i + 1;
        }
        if (push(out, kind, start, end) < 0)
            return -1;
        if (out->count == most)
            return 0;
        i = resume;
    }
}
