/* One pass over an XLine's bytes in C: each event's metadata id, offset and duration, whether it
 * holds more (stats, occurrences), and where its tag is. What lines.py does with numpy, ten times
 * faster and without the GIL, so lines decode side by side in threads. Optional: where this
 * module was not built, lines.py decodes in numpy alone. Reads only inside the buffer it is
 * given; any malformed field is an error (-1 from the C side, ValueError in Python), never a
 * read past the end. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define EVENTS 4 /* XLine.events: a length-delimited field */

/* The varint at *pos (at most 10 bytes, before end); advances *pos. 0 on success. */
static int varint(const uint8_t *data, Py_ssize_t end, Py_ssize_t *pos, uint64_t *out) {
    uint64_t value = 0;
    int shift = 0;
    while (*pos < end && shift < 70) {
        uint8_t byte = data[(*pos)++];
        value |= (uint64_t)(byte & 0x7F) << shift;
        if (byte < 0x80) {
            *out = value;
            return 0;
        }
        shift += 7;
    }
    return -1;
}

/* The field at *pos, advancing *pos past it: its number and wire type, where its value starts, and
 * the value itself (a varint's, or a length-delimited field's length). 0 on success; -1 where it
 * runs past `end` or its wire type is not one protobuf uses. */
static int field(const uint8_t *data, Py_ssize_t end, Py_ssize_t *pos, uint64_t *number, unsigned *wire,
                 Py_ssize_t *start, uint64_t *value) {
    uint64_t tag;
    if (varint(data, end, pos, &tag)) return -1;
    *number = tag >> 3;
    *wire = (unsigned)(tag & 7);
    *value = 0;
    switch (*wire) {
    case 0:
        *start = *pos;
        return varint(data, end, pos, value);
    case 1:
    case 5: {
        Py_ssize_t size = *wire == 1 ? 8 : 4;
        *start = *pos;
        if (end - *pos < size) return -1;
        *pos += size;
        return 0;
    }
    case 2:
        if (varint(data, end, pos, value) || *value > (uint64_t)(end - *pos)) return -1;
        *start = *pos;
        *pos += (Py_ssize_t)*value;
        return 0;
    default:
        return -1;
    }
}

/* One event's message in [pos, end): its fields 1-3 and whether it holds any other. */
static int event(const uint8_t *data, Py_ssize_t pos, Py_ssize_t end, int64_t *mid, int64_t *offset,
                 int64_t *duration, uint8_t *rest) {
    *mid = *offset = *duration = 0;
    *rest = 0;
    while (pos < end) {
        uint64_t number, value;
        unsigned wire;
        Py_ssize_t start;
        if (field(data, end, &pos, &number, &wire, &start, &value)) return -1;
        if (number >= 1 && number <= 3) {
            if (wire != 0) return -1;
            if (number == 1) *mid = (int64_t)value;
            else if (number == 2) *offset = (int64_t)value;
            else *duration = (int64_t)value;
        } else {
            *rest = 1;
        }
    }
    return 0;
}

/* decode(data, slots, drop, mid, offset, duration, rest, tags) -> events kept. The five outputs
 * are writable buffers of `count` items (int64, int64, int64, uint8, int64); more events than
 * that is an error, as is any field that runs past the line. `slots` (int64, may be empty): the
 * plane's metadata ids as slots of its sorted metadata table, its last item the slot of an id it
 * lacks; given, `mid` holds each event's slot, and events whose slot `drop` (uint8) marks are
 * left out where their duration is 0 (the thread pool's bookkeeping instants). */
static PyObject *decode(PyObject *self, PyObject *args) {
    Py_buffer data, slots, drop, mid, offset, duration, rest, tags;
    if (!PyArg_ParseTuple(args, "y*y*y*w*w*w*w*w*", &data, &slots, &drop, &mid, &offset, &duration, &rest, &tags))
        return NULL;
    Py_ssize_t count = mid.len / 8, found = 0, n_slots = slots.len / 8;
    int bad = offset.len / 8 != count || duration.len / 8 != count || rest.len != count || tags.len / 8 != count;
    const int64_t *table = (const int64_t *)slots.buf;
    const uint8_t *dropped = (const uint8_t *)drop.buf;
    for (Py_ssize_t i = 0; i < n_slots && !bad; i++)  /* every slot must index `drop` */
        bad = table[i] < 0 || table[i] >= drop.len;
    const uint8_t *bytes = (const uint8_t *)data.buf;
    Py_ssize_t end = data.len, pos = 0;
    int64_t *m = (int64_t *)mid.buf, *o = (int64_t *)offset.buf, *d = (int64_t *)duration.buf, *t = (int64_t *)tags.buf;
    uint8_t *r = (uint8_t *)rest.buf;
    if (!bad) {
        Py_BEGIN_ALLOW_THREADS
        while (pos < end && !bad) {
            Py_ssize_t at = pos, start;
            uint64_t number, length;
            unsigned wire;
            if (field(bytes, end, &pos, &number, &wire, &start, &length)) { bad = 1; break; }
            if (number != EVENTS || wire != 2) continue;
            if (found >= count) { bad = 1; break; }
            t[found] = at;
            bad = event(bytes, start, pos, &m[found], &o[found], &d[found], &r[found]);
            if (n_slots) {
                uint64_t id = (uint64_t)m[found];
                m[found] = table[id < (uint64_t)(n_slots - 1) ? (Py_ssize_t)id : n_slots - 1];
                if (dropped[m[found]] && d[found] == 0) continue;
            }
            found++;
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&data);
    PyBuffer_Release(&slots);
    PyBuffer_Release(&drop);
    PyBuffer_Release(&mid);
    PyBuffer_Release(&offset);
    PyBuffer_Release(&duration);
    PyBuffer_Release(&rest);
    PyBuffer_Release(&tags);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "a line's fields run past its end (truncated or corrupt)");
        return NULL;
    }
    return PyLong_FromSsize_t(found);
}

/* header(data) -> (events, name_at, name_len, display_at, display_len, timestamp_ns): one hop over
 * the line's fields, counting its events (field 4) and finding its name (2), display name (11)
 * and timestamp (3); the last of a repeated field wins, as in protobuf. ValueError if any field
 * runs past the end or has an unknown wire type. */
static PyObject *header(PyObject *self, PyObject *args) {
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "y*", &data)) return NULL;
    const uint8_t *bytes = (const uint8_t *)data.buf;
    Py_ssize_t end = data.len, pos = 0, count = 0, name_at = 0, name_len = 0, display_at = 0, display_len = 0;
    uint64_t timestamp = 0;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    while (pos < end) {
        uint64_t number, value;
        unsigned wire;
        Py_ssize_t start;
        if (field(bytes, end, &pos, &number, &wire, &start, &value)) { bad = 1; break; }
        if (wire == 2 && number == EVENTS) count++;
        else if (wire == 2 && number == 2) { name_at = start; name_len = (Py_ssize_t)value; }
        else if (wire == 2 && number == 11) { display_at = start; display_len = (Py_ssize_t)value; }
        else if (wire == 0 && number == 3) timestamp = value;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "a line's fields run past its end (truncated or corrupt)");
        return NULL;
    }
    return Py_BuildValue("nnnnnL", count, name_at, name_len, display_at, display_len, (long long)timestamp);
}

/* self_times(names, start, duration, is_op, out) -> 1, or 0 where the line's ops are not in time
 * order (parents first); `out` then is untouched and the caller sorts. Per event of one line
 * (names int32, start and duration int64, out int64): an op's duration less the op time nested
 * directly inside it, 0 for events that are not ops (is_op: uint8 per name code). One pass with
 * a stack of the ops still open; non-op events are transparent. */
static PyObject *self_times(PyObject *self, PyObject *args) {
    Py_buffer names, start, duration, is_op, out;
    if (!PyArg_ParseTuple(args, "y*y*y*y*w*", &names, &start, &duration, &is_op, &out)) return NULL;
    Py_ssize_t n = names.len / 4;
    int ok = start.len / 8 == n && duration.len / 8 == n && out.len / 8 == n, sorted = 1, bad = !ok;
    Py_ssize_t *stack = NULL;
    if (ok && n) {
        stack = (Py_ssize_t *)PyMem_RawMalloc(sizeof(Py_ssize_t) * (size_t)n);
        if (!stack) bad = 1;
    }
    if (ok && !bad) {
        const int32_t *code = (const int32_t *)names.buf;
        const int64_t *s = (const int64_t *)start.buf, *d = (const int64_t *)duration.buf;
        const uint8_t *op = (const uint8_t *)is_op.buf;
        int64_t *own = (int64_t *)out.buf;
        Py_ssize_t depth = 0, last = -1;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            own[i] = 0;
            if (code[i] < 0 || code[i] >= is_op.len || !op[code[i]]) continue;
            if (last >= 0 && (s[i] < s[last] || (s[i] == s[last] && d[i] > d[last]))) { sorted = 0; break; }
            last = i;
            int64_t end = s[i] + d[i];
            while (depth && s[stack[depth - 1]] + d[stack[depth - 1]] <= s[i]) depth--;
            if (depth) {
                Py_ssize_t parent = stack[depth - 1];
                int64_t parent_end = s[parent] + d[parent];
                own[parent] -= (end < parent_end ? end : parent_end) - s[i];
            }
            own[i] += d[i];
            stack[depth++] = i;
        }
        Py_END_ALLOW_THREADS
    }
    PyMem_RawFree(stack);
    PyBuffer_Release(&names);
    PyBuffer_Release(&start);
    PyBuffer_Release(&duration);
    PyBuffer_Release(&is_op);
    PyBuffer_Release(&out);
    if (bad) {
        if (!ok) PyErr_SetString(PyExc_ValueError, "self_times: buffers of different lengths");
        else PyErr_NoMemory();
        return NULL;
    }
    return PyLong_FromLong(sorted);
}

/* fields(data, offset) -> [(number, tag_start, start, end)] of the message in `data`, positions
 * plus `offset` (wire.Field's); None where the bytes are not a well-formed message (the caller's
 * walker then says what is wrong). */
static PyObject *fields(PyObject *self, PyObject *args) {
    Py_buffer data;
    Py_ssize_t offset;
    if (!PyArg_ParseTuple(args, "y*n", &data, &offset)) return NULL;
    const uint8_t *bytes = (const uint8_t *)data.buf;
    Py_ssize_t end = data.len, pos = 0;
    PyObject *out = PyList_New(0);
    while (out && pos < end) {
        Py_ssize_t tag_start = pos, start;
        uint64_t number, value;
        unsigned wire;
        if (field(bytes, end, &pos, &number, &wire, &start, &value) || number == 0) goto malformed;
        PyObject *item = Py_BuildValue("(Knnn)", (unsigned long long)number, tag_start + offset, start + offset,
                                       pos + offset);
        if (!item || PyList_Append(out, item)) {
            Py_XDECREF(item);
            Py_CLEAR(out);
            break;
        }
        Py_DECREF(item);
    }
    PyBuffer_Release(&data);
    return out;
malformed:
    PyBuffer_Release(&data);
    Py_DECREF(out);
    Py_RETURN_NONE;
}

/* ints(data) -> {number: value} of the message's varint fields (the last of a repeated one), or
 * None where the bytes are not a well-formed message. */
static PyObject *ints(PyObject *self, PyObject *args) {
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "y*", &data)) return NULL;
    const uint8_t *bytes = (const uint8_t *)data.buf;
    Py_ssize_t end = data.len, pos = 0;
    PyObject *out = PyDict_New();
    while (out && pos < end) {
        uint64_t number, value;
        unsigned wire;
        Py_ssize_t start;
        if (field(bytes, end, &pos, &number, &wire, &start, &value) || number == 0) goto malformed;
        if (wire != 0) continue;
        PyObject *key = PyLong_FromUnsignedLongLong(number), *val = PyLong_FromUnsignedLongLong(value);
        if (!key || !val || PyDict_SetItem(out, key, val)) Py_CLEAR(out);
        Py_XDECREF(key);
        Py_XDECREF(val);
    }
    PyBuffer_Release(&data);
    return out;
malformed:
    PyBuffer_Release(&data);
    Py_DECREF(out);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"ints", ints, METH_VARARGS, "A message's varint fields as {number: value}, or None."},
    {"fields", fields, METH_VARARGS, "The fields of a message: (number, tag_start, start, end), or None."},
    {"self_times", self_times, METH_VARARGS, "Op self times of one line in time order; 0 where it is not."},
    {"header", header, METH_VARARGS, "A line's event count, name and display name (offset, length) and timestamp."},
    {"decode", decode, METH_VARARGS, "Decode a line's events into the given buffers; returns how many."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_events", "An XLine's events decoded in C.", -1, methods};

PyMODINIT_FUNC PyInit__events(void) { return PyModule_Create(&module); }
