/* tilecraft's compiled launcher: one CPython extension, built once per interpreter and platform.
 *
 * A Plan holds one kernel's launch, decided at load time: the rules every argument must satisfy
 * (buffer dtype, rank, static dims, symbolic dims and their ranges, contiguity, device, alignment,
 * writability; scalar kind and range), how outputs are allocated, and the launch itself, either
 * cuLaunchKernel per device kernel (grid programs, block, shared memory, the parameter slots) or a
 * host function taking the slots' addresses. Calling the Plan checks and launches with no Python
 * frame. Anything a rule does not accept returns the `miss` object: the caller then takes the Python
 * path, which makes the same checks and raises its error messages. So this file never decides that a
 * call is wrong; it only recognizes calls that are right.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define MAX_PARAMS 64
#define MAX_VARS 32
#define MAX_DIMS 8
#define MAX_KERNELS 8
#define MAX_SLOTS 72
#define MAX_CODE 96

enum { P_BUFFER = 0, P_INT = 1, P_UINT = 2, P_FLOAT = 3, P_BOOL = 4 };
enum { E_SIGNED = 0, E_UNSIGNED = 1, E_FLOAT = 2, E_BOOL = 3 };
enum {
    OP_CONST, OP_LOAD, OP_ADD, OP_SUB, OP_MUL, OP_FLOORDIV, OP_FLOORMOD, OP_TDIV, OP_TMOD, OP_MIN, OP_MAX,
    OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_AND, OP_OR, OP_NOT, OP_SELECT, OP_INRANGE
};
enum { L_KERNEL_PARAMS = 0, L_PACKED_CALL = 1 };

typedef union { int64_t i; uint64_t u; double d; } Value;

typedef struct {
    int kind;
    PyObject *torch_dtype;
    int elem_kind, itemsize, ndim, written, is_f32;
    int64_t dims[MAX_DIMS]; /* >= 0: static size; < 0: symbolic dim -(j + 1) */
    int64_t low, high;
    uint64_t uhigh;
} ParamRule;

typedef struct { int param, twin; PyObject *torch_dtype, *numpy_dtype; } OutRule;

typedef struct {
    uint64_t function;
    int64_t code[3][MAX_CODE];
    int code_len[3];
    unsigned block[3], smem;
    int nslots, slot_src[MAX_SLOTS];
    char slot_type[MAX_SLOTS];
} KernelRule;

typedef int (*launch_kernel_t)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                               void *, void **, void **);
typedef int32_t (*packed_call_t)(void **);

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *miss, *tensor_type, *ndarray_type, *empty, *empty_like, *np_empty, *stream, *failed, *keep;
    long torch_device;
    uint64_t alignment;
    int n_params, n_inputs, n_vars, n_outputs, launch_kind, n_kernels;
    int inputs[MAX_PARAMS];
    int64_t var_high[MAX_VARS];
    ParamRule params[MAX_PARAMS];
    OutRule outputs[MAX_PARAMS];
    uint64_t address;
    KernelRule kernels[MAX_KERNELS];
    KernelRule call; /* the packed call's slots */
} Plan;

static PyObject *s_dtype, *s_is_cpu, *s_get_device, *s_is_contiguous, *s_data_ptr, *s_shape, *s_device, *s_kwnames;

typedef struct { Py_buffer views[MAX_PARAMS]; int held[MAX_PARAMS]; } Views;

static void release_views(Views *v, int n) {
    for (int i = 0; i < n; i++)
        if (v->held[i]) PyBuffer_Release(&v->views[i]);
}

/* -------------------------------------------------------------------- reading arguments */

static int bind_dims(Plan *p, const ParamRule *r, const int64_t *shape, int64_t *vars, int *bound) {
    for (int a = 0; a < r->ndim; a++) {
        int64_t want = r->dims[a], got = shape[a];
        if (want >= 0) {
            if (got != want) return 0;
        } else {
            int j = (int)(-want - 1);
            if (bound[j]) {
                if (vars[j] != got) return 0;
            } else {
                if (got < 0 || got > p->var_high[j]) return 0;
                vars[j] = got;
                bound[j] = 1;
            }
        }
    }
    return 1;
}

static PyObject *call_method(PyObject *obj, PyObject *name) {
    return PyObject_VectorcallMethod(name, &obj, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

/* 1: accepted, 0: miss, -1: error set */
static int read_tensor_checked(Plan *p, PyObject *obj, const ParamRule *r, Value *value, int64_t *shape) {
    PyObject *t = PyObject_GetAttr(obj, s_dtype);
    if (t == NULL) return -1;
    int same = t == r->torch_dtype;
    Py_DECREF(t);
    if (!same) return 0;
    t = call_method(obj, s_get_device);
    if (t == NULL) return -1;
    long device = PyLong_AsLong(t);
    Py_DECREF(t);
    if (device != p->torch_device) return PyErr_Occurred() ? -1 : 0;
    if (device < 0) { /* -1 is the host and also meta and other non-device tensors: ask is_cpu */
        t = PyObject_GetAttr(obj, s_is_cpu);
        if (t == NULL) return -1;
        same = t == Py_True;
        Py_DECREF(t);
        if (!same) return 0;
    }
    t = call_method(obj, s_is_contiguous);
    if (t == NULL) return -1;
    same = t == Py_True;
    Py_DECREF(t);
    if (!same) return 0;
    t = PyObject_GetAttr(obj, s_shape);
    if (t == NULL) return -1;
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != r->ndim) {
        Py_DECREF(t);
        return 0;
    }
    for (int a = 0; a < r->ndim; a++) shape[a] = PyLong_AsLongLong(PyTuple_GET_ITEM(t, a));
    Py_DECREF(t);
    if (PyErr_Occurred()) return -1;
    t = call_method(obj, s_data_ptr);
    if (t == NULL) return -1;
    value->u = PyLong_AsUnsignedLongLong(t);
    Py_DECREF(t);
    if (PyErr_Occurred()) return -1;
    return (value->u & (p->alignment - 1)) == 0;
}

/* 1: accepted, 0: miss. A tensor that raises when asked (a meta tensor's data_ptr) is a miss too: the
 * Python path asks the same and reports it. */
static int read_tensor(Plan *p, PyObject *obj, const ParamRule *r, Value *value, int64_t *shape) {
    int ok = read_tensor_checked(p, obj, r, value, shape);
    if (ok < 0) {
        PyErr_Clear();
        return 0;
    }
    return ok;
}

static int format_kind(const char *format, int *kind) {
    if (format == NULL || format[0] == 0 || format[1] != 0) return 0; /* native order only */
    switch (format[0]) {
    case 'b': case 'h': case 'i': case 'l': case 'q': *kind = E_SIGNED; return 1;
    case 'B': case 'H': case 'I': case 'L': case 'Q': *kind = E_UNSIGNED; return 1;
    case 'e': case 'f': case 'd': *kind = E_FLOAT; return 1;
    case '?': *kind = E_BOOL; return 1;
    default: return 0;
    }
}

static int read_ndarray(Plan *p, PyObject *obj, const ParamRule *r, Value *value, int64_t *shape, Py_buffer *view,
                        int *held) {
    if (PyObject_GetBuffer(obj, view, PyBUF_RECORDS_RO) != 0) {
        PyErr_Clear(); /* a dtype without a buffer format (bfloat16...): the Python path reads it */
        return 0;
    }
    *held = 1;
    int kind;
    if (!format_kind(view->format, &kind) || kind != r->elem_kind || view->itemsize != r->itemsize) return 0;
    if (view->ndim != r->ndim || (view->readonly && r->written)) return 0;
    int empty = 0;
    for (int a = 0; a < r->ndim; a++) {
        shape[a] = view->shape[a];
        empty |= shape[a] == 0;
    }
    Py_ssize_t expected = view->itemsize;
    for (int a = r->ndim - 1; a >= 0 && !empty; a--) {
        if (shape[a] != 1 && view->strides[a] != expected) return 0;
        expected *= shape[a];
    }
    value->u = (uint64_t)(uintptr_t)view->buf;
    return (value->u & (p->alignment - 1)) == 0;
}

static int read_buffer(Plan *p, PyObject *obj, const ParamRule *r, Value *value, int64_t *vars, int *bound,
                       Py_buffer *view, int *held) {
    int64_t shape[MAX_DIMS];
    int ok;
    if ((PyObject *)Py_TYPE(obj) == p->tensor_type)
        ok = read_tensor(p, obj, r, value, shape);
    else if ((PyObject *)Py_TYPE(obj) == p->ndarray_type)
        ok = read_ndarray(p, obj, r, value, shape, view, held);
    else
        return 0;
    return ok == 1 ? bind_dims(p, r, shape, vars, bound) : ok;
}

static int read_scalar(const ParamRule *r, PyObject *obj, Value *value) {
    PyTypeObject *type = Py_TYPE(obj);
    if (r->kind == P_BOOL) {
        if (type != &PyBool_Type) return 0;
        value->i = obj == Py_True;
        return 1;
    }
    if (r->kind == P_FLOAT) {
        if (type == &PyFloat_Type)
            value->d = PyFloat_AS_DOUBLE(obj);
        else if (type == &PyLong_Type) {
            value->d = PyLong_AsDouble(obj);
            if (value->d == -1.0 && PyErr_Occurred()) {
                PyErr_Clear();
                return 0;
            }
        } else
            return 0;
        /* struct refuses a finite value float32 cannot hold; the Python path says which parameter */
        return !(r->is_f32 && isfinite(value->d) && fabs(value->d) > FLT_MAX);
    }
    if (type != &PyLong_Type) return 0;
    if (r->kind == P_UINT) {
        value->u = PyLong_AsUnsignedLongLong(obj);
        if (PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        return value->u <= r->uhigh;
    }
    int overflow;
    value->i = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow || (value->i == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    return r->low <= value->i && value->i <= r->high;
}

/* -------------------------------------------------------------------- grids */

static int64_t floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* 1: *out holds the value; 0: the program cannot be evaluated here (division by zero, overflow) */
static int run_program(const int64_t *code, int len, const Value *values, int64_t *out) {
    int64_t stack[MAX_CODE];
    int top = 0;
    for (int pc = 0; pc < len; pc++) {
        int64_t op = code[pc], a, b;
        if (op == OP_CONST) { stack[top++] = code[++pc]; continue; }
        if (op == OP_LOAD) { stack[top++] = values[code[++pc]].i; continue; }
        if (op == OP_NOT) { stack[top - 1] = !stack[top - 1]; continue; }
        if (op == OP_SELECT) {
            int64_t no = stack[--top], yes = stack[--top], cond = stack[--top];
            stack[top++] = cond ? yes : no;
            continue;
        }
        if (op == OP_INRANGE) { /* a narrowing cast: the value when it fits, else the Python path decides */
            int64_t hi = stack[--top], lo = stack[--top];
            if (stack[top - 1] < lo || stack[top - 1] > hi) return 0;
            continue;
        }
        b = stack[--top];
        a = stack[--top];
        int64_t r;
        switch (op) {
        case OP_ADD: if (__builtin_add_overflow(a, b, &r)) return 0; break;
        case OP_SUB: if (__builtin_sub_overflow(a, b, &r)) return 0; break;
        case OP_MUL: if (__builtin_mul_overflow(a, b, &r)) return 0; break;
        case OP_FLOORDIV: if (b == 0 || (a == INT64_MIN && b == -1)) return 0; r = floordiv(a, b); break;
        case OP_FLOORMOD: if (b == 0 || (a == INT64_MIN && b == -1)) return 0; r = a - b * floordiv(a, b); break;
        case OP_TDIV: if (b == 0 || (a == INT64_MIN && b == -1)) return 0; r = a / b; break;
        case OP_TMOD: if (b == 0 || (a == INT64_MIN && b == -1)) return 0; r = a % b; break;
        case OP_MIN: r = a < b ? a : b; break;
        case OP_MAX: r = a > b ? a : b; break;
        case OP_EQ: r = a == b; break;
        case OP_NE: r = a != b; break;
        case OP_LT: r = a < b; break;
        case OP_LE: r = a <= b; break;
        case OP_GT: r = a > b; break;
        case OP_GE: r = a >= b; break;
        case OP_AND: r = a && b; break;
        case OP_OR: r = a || b; break;
        default: return 0;
        }
        stack[top++] = r;
    }
    *out = stack[0];
    return top == 1;
}

/* -------------------------------------------------------------------- slots */

typedef struct { uint64_t storage[MAX_SLOTS]; void *pointers[MAX_SLOTS]; } Slots;

static void pack_slots(const KernelRule *k, const Value *values, Slots *s) {
    for (int i = 0; i < k->nslots; i++) {
        Value v = values[k->slot_src[i]];
        void *slot = &s->storage[i];
        s->storage[i] = 0;
        switch (k->slot_type[i]) {
        case 'f': { float f = (float)v.d; memcpy(slot, &f, 4); break; }
        case 'd': memcpy(slot, &v.d, 8); break;
        case 'i': case 'I': { uint32_t x = (uint32_t)v.u; memcpy(slot, &x, 4); break; }
        case 'h': case 'H': { uint16_t x = (uint16_t)v.u; memcpy(slot, &x, 2); break; }
        case 'b': case 'B': { uint8_t x = (uint8_t)v.u; memcpy(slot, &x, 1); break; }
        default: memcpy(slot, &v.u, 8); break; /* pointers, 64-bit integers */
        }
        s->pointers[i] = slot;
    }
}

static const int64_t MAX_GRID[3] = {2147483647LL, 65535, 65535};

static PyObject *launch_kernels(Plan *p, const Value *values) {
    int64_t grids[MAX_KERNELS][3];
    int skip[MAX_KERNELS];
    for (int k = 0; k < p->n_kernels; k++) {
        skip[k] = 0;
        for (int a = 0; a < 3; a++) {
            const KernelRule *kr = &p->kernels[k];
            if (!run_program(kr->code[a], kr->code_len[a], values, &grids[k][a])) return Py_NewRef(p->miss);
            if (grids[k][a] == 0) skip[k] = 1;
            else if (grids[k][a] < 0 || grids[k][a] > MAX_GRID[a]) return Py_NewRef(p->miss);
        }
    }
    PyObject *device = PyLong_FromLong(p->torch_device);
    if (device == NULL) return NULL;
    PyObject *handle = PyObject_Vectorcall(p->stream, &device, 1, NULL);
    Py_DECREF(device);
    if (handle == NULL) return NULL;
    void *stream = PyLong_AsVoidPtr(handle);
    Py_DECREF(handle);
    if (PyErr_Occurred()) return NULL;
    launch_kernel_t launch = (launch_kernel_t)(uintptr_t)p->address;
    for (int k = 0; k < p->n_kernels; k++) {
        if (skip[k]) continue;
        const KernelRule *kr = &p->kernels[k];
        Slots s;
        pack_slots(kr, values, &s);
        void **params = kr->nslots ? s.pointers : NULL;
        int rc = launch((void *)(uintptr_t)kr->function, (unsigned)grids[k][0], (unsigned)grids[k][1],
                        (unsigned)grids[k][2], kr->block[0], kr->block[1], kr->block[2], kr->smem, stream, params, NULL);
        if (rc != 0) {
            PyObject *r = PyObject_CallFunction(p->failed, "ii(KLLLIIIIKKi)", k, rc, (unsigned long long)kr->function,
                                                (long long)grids[k][0], (long long)grids[k][1], (long long)grids[k][2],
                                                kr->block[0], kr->block[1], kr->block[2], kr->smem,
                                                (unsigned long long)(uintptr_t)stream,
                                                (unsigned long long)(uintptr_t)params, 0);
            if (r == NULL) return NULL;
            Py_DECREF(r);
        }
    }
    Py_RETURN_NONE;
}

static PyObject *packed_call(Plan *p, const Value *values) {
    Slots s;
    pack_slots(&p->call, values, &s);
    packed_call_t fn = (packed_call_t)(uintptr_t)p->address;
    int32_t rc;
    Py_BEGIN_ALLOW_THREADS
    rc = fn(s.pointers);
    Py_END_ALLOW_THREADS
    if (rc != 0) {
        PyObject *r = PyObject_CallFunction(p->failed, "i", rc);
        if (r == NULL) return NULL;
        Py_DECREF(r);
    }
    Py_RETURN_NONE;
}

/* -------------------------------------------------------------------- outputs */

static PyObject *allocate(Plan *p, const OutRule *o, PyObject *reference, PyObject *twin, const int64_t *vars) {
    const ParamRule *r = &p->params[o->param];
    if ((PyObject *)Py_TYPE(reference) == p->tensor_type) {
        if (twin != NULL) return PyObject_Vectorcall(p->empty_like, &twin, 1, NULL);
        PyObject *args[MAX_DIMS + 3];
        int n = 0, ok = 1;
        PyObject *device = PyObject_GetAttr(reference, s_device);
        if (device == NULL) return NULL;
        if (r->ndim == 0) args[n++] = PyTuple_New(0);
        for (int a = 0; a < r->ndim; a++) {
            args[n] = PyLong_FromLongLong(r->dims[a] >= 0 ? r->dims[a] : vars[-r->dims[a] - 1]);
            ok &= args[n++] != NULL;
        }
        PyObject *result = NULL;
        if (ok) {
            args[n] = o->torch_dtype;
            args[n + 1] = device;
            result = PyObject_Vectorcall(p->empty, args, n, s_kwnames);
        }
        for (int a = 0; a < n; a++) Py_XDECREF(args[a]);
        Py_DECREF(device);
        return result;
    }
    PyObject *shape = PyTuple_New(r->ndim);
    if (shape == NULL) return NULL;
    for (int a = 0; a < r->ndim; a++) {
        PyObject *d = PyLong_FromLongLong(r->dims[a] >= 0 ? r->dims[a] : vars[-r->dims[a] - 1]);
        if (d == NULL) { Py_DECREF(shape); return NULL; }
        PyTuple_SET_ITEM(shape, a, d);
    }
    PyObject *args[2] = {shape, o->numpy_dtype};
    PyObject *result = PyObject_Vectorcall(p->np_empty, args, 2, NULL);
    Py_DECREF(shape);
    return result;
}

/* -------------------------------------------------------------------- the call */

static PyObject *plan_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Plan *p = (Plan *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames)) return Py_NewRef(p->miss);
    int allocating = nargs == p->n_inputs && p->n_outputs > 0;
    if (!allocating && nargs != p->n_params) return Py_NewRef(p->miss);
    PyObject *objects[MAX_PARAMS];
    if (allocating)
        for (int i = 0; i < p->n_inputs; i++) objects[p->inputs[i]] = args[i];
    else
        for (int i = 0; i < p->n_params; i++) objects[i] = args[i];
    Value values[MAX_PARAMS + MAX_VARS];
    int bound[MAX_VARS] = {0};
    int64_t vars[MAX_VARS];
    Views views;
    memset(views.held, 0, sizeof(views.held));
    PyObject *result = NULL, *allocated[MAX_PARAMS];
    int n_allocated = 0, reference = -1, order[MAX_PARAMS], n_order = 0;
    for (int i = 0; i < p->n_inputs; i++) order[n_order++] = p->inputs[i];
    if (!allocating)
        for (int o = 0; o < p->n_outputs; o++) order[n_order++] = p->outputs[o].param;
    for (int k = 0; k < n_order; k++) {
        int i = order[k];
        const ParamRule *r = &p->params[i];
        int ok = r->kind == P_BUFFER
                     ? read_buffer(p, objects[i], r, &values[i], vars, bound, &views.views[i], &views.held[i])
                     : read_scalar(r, objects[i], &values[i]);
        if (ok != 1) {
            result = ok == 0 ? Py_NewRef(p->miss) : NULL;
            goto done;
        }
        if (reference < 0 && r->kind == P_BUFFER) reference = i;
    }
    if (allocating) {
        if (reference < 0) { /* only scalar inputs: no array says where outputs go; the Python path decides */
            result = Py_NewRef(p->miss);
            goto done;
        }
        for (int o = 0; o < p->n_outputs; o++) {
            const OutRule *out = &p->outputs[o];
            PyObject *twin = out->twin >= 0 && Py_TYPE(objects[out->twin]) == Py_TYPE(objects[reference])
                                 ? objects[out->twin] : NULL;
            PyObject *a = allocate(p, out, objects[reference], twin, vars);
            if (a == NULL) goto done;
            allocated[n_allocated++] = a;
            objects[out->param] = a;
            int ok = read_buffer(p, a, &p->params[out->param], &values[out->param], vars, bound,
                                 &views.views[out->param], &views.held[out->param]);
            if (ok != 1) { /* an output numpy cannot export (bfloat16...): the Python path allocates again */
                result = ok == 0 ? Py_NewRef(p->miss) : NULL;
                goto done;
            }
        }
    }
    for (int j = 0; j < p->n_vars; j++) values[p->n_params + j].i = vars[j];
    PyObject *launched = p->launch_kind == L_KERNEL_PARAMS ? launch_kernels(p, values) : packed_call(p, values);
    if (launched == NULL || launched == p->miss) {
        result = launched;
        goto done;
    }
    Py_DECREF(launched);
    if (!allocating) {
        result = Py_NewRef(Py_None);
    } else if (n_allocated == 1) {
        result = Py_NewRef(allocated[0]);
    } else {
        result = PyList_New(n_allocated);
        if (result != NULL)
            for (int o = 0; o < n_allocated; o++) PyList_SET_ITEM(result, o, Py_NewRef(allocated[o]));
    }
done:
    release_views(&views, p->n_params);
    for (int o = 0; o < n_allocated; o++) Py_DECREF(allocated[o]);
    return result;
}

/* -------------------------------------------------------------------- construction */

static int as_int(PyObject *tuple, Py_ssize_t i, long long *out) {
    *out = PyLong_AsLongLong(PyTuple_GET_ITEM(tuple, i));
    return !(*out == -1 && PyErr_Occurred());
}

static int fail(const char *message) {
    PyErr_SetString(PyExc_ValueError, message);
    return 0;
}

static int parse_param(Plan *p, PyObject *spec, ParamRule *r) {
    long long kind, x;
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) < 1 || !as_int(spec, 0, &kind)) return fail("bad param");
    r->kind = (int)kind;
    Py_ssize_t n = PyTuple_GET_SIZE(spec);
    if (kind == P_BUFFER) {
        if (n != 6) return fail("buffer rule: (0, torch dtype, element kind, itemsize, dims, written)");
        r->torch_dtype = Py_NewRef(PyTuple_GET_ITEM(spec, 1));
        if (!as_int(spec, 2, &x)) return 0;
        r->elem_kind = (int)x;
        if (!as_int(spec, 3, &x)) return 0;
        r->itemsize = (int)x;
        PyObject *dims = PyTuple_GET_ITEM(spec, 4);
        if (!PyTuple_Check(dims) || PyTuple_GET_SIZE(dims) > MAX_DIMS) return fail("too many dims");
        r->ndim = (int)PyTuple_GET_SIZE(dims);
        for (int a = 0; a < r->ndim; a++) {
            if (!as_int(dims, a, &x)) return 0;
            if (x < 0 && -x - 1 >= p->n_vars) return fail("dim names an unknown var");
            r->dims[a] = x;
        }
        if (!as_int(spec, 5, &x)) return 0;
        r->written = (int)x;
        return 1;
    }
    if (kind == P_INT && n == 3) return as_int(spec, 1, (long long *)&r->low) && as_int(spec, 2, (long long *)&r->high);
    if (kind == P_UINT && n == 2) {
        r->uhigh = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(spec, 1));
        return !PyErr_Occurred();
    }
    if (kind == P_FLOAT && n == 2) {
        if (!as_int(spec, 1, &x)) return 0;
        r->is_f32 = (int)x;
        return 1;
    }
    if (kind == P_BOOL && n == 1) return 1;
    return fail("unknown param rule");
}

static int parse_slots(PyObject *slots, KernelRule *k, int n_values) {
    if (!PyTuple_Check(slots) || PyTuple_GET_SIZE(slots) > MAX_SLOTS) return fail("too many slots");
    k->nslots = (int)PyTuple_GET_SIZE(slots);
    for (int i = 0; i < k->nslots; i++) {
        PyObject *slot = PyTuple_GET_ITEM(slots, i);
        long long src;
        const char *type;
        if (!PyArg_ParseTuple(slot, "Ls", &src, &type)) return 0;
        if (src < 0 || src >= n_values || strlen(type) != 1 || !strchr("pbBhHiIqQfd", type[0]))
            return fail("bad slot");
        k->slot_src[i] = (int)src;
        k->slot_type[i] = type[0];
    }
    return 1;
}

static int parse_program(PyObject *code, int64_t *out, int *len, int n_values) {
    if (!PyTuple_Check(code) || PyTuple_GET_SIZE(code) > MAX_CODE) return fail("grid program too long");
    *len = (int)PyTuple_GET_SIZE(code);
    for (int i = 0; i < *len; i++) {
        long long x;
        if (!as_int(code, i, &x)) return 0;
        out[i] = x;
        if (x == OP_LOAD && (i + 1 >= *len || PyLong_AsLongLong(PyTuple_GET_ITEM(code, i + 1)) >= n_values))
            return fail("grid program loads an unknown value");
        if (x == OP_CONST || x == OP_LOAD) {
            if (i + 1 >= *len || !as_int(code, ++i, &x)) return PyErr_Occurred() ? 0 : fail("truncated program");
            out[i] = x;
        }
    }
    return *len > 0;
}

static int parse_kernel(PyObject *spec, KernelRule *k, int n_values) {
    PyObject *programs, *slots;
    unsigned long long function;
    if (!PyArg_ParseTuple(spec, "KO(III)IO", &function, &programs, &k->block[0], &k->block[1], &k->block[2],
                          &k->smem, &slots))
        return 0;
    k->function = function;
    if (!PyTuple_Check(programs) || PyTuple_GET_SIZE(programs) != 3) return fail("a kernel needs 3 grid programs");
    for (int a = 0; a < 3; a++)
        if (!parse_program(PyTuple_GET_ITEM(programs, a), k->code[a], &k->code_len[a], n_values)) return 0;
    return parse_slots(slots, k, n_values);
}

static void plan_dealloc(PyObject *self) {
    Plan *p = (Plan *)self;
    PyObject_GC_UnTrack(self);
    for (int i = 0; i < p->n_params; i++) Py_XDECREF(p->params[i].torch_dtype);
    for (int o = 0; o < p->n_outputs; o++) {
        Py_XDECREF(p->outputs[o].torch_dtype);
        Py_XDECREF(p->outputs[o].numpy_dtype);
    }
    Py_XDECREF(p->miss); Py_XDECREF(p->tensor_type); Py_XDECREF(p->ndarray_type); Py_XDECREF(p->empty);
    Py_XDECREF(p->empty_like); Py_XDECREF(p->np_empty); Py_XDECREF(p->stream); Py_XDECREF(p->failed);
    Py_XDECREF(p->keep);
    PyObject_GC_Del(self);
}

static int plan_traverse(PyObject *self, visitproc visit, void *arg) {
    Plan *p = (Plan *)self;
    Py_VISIT(p->failed);
    Py_VISIT(p->stream);
    Py_VISIT(p->keep);
    return 0;
}

static PyTypeObject PlanType;

static int parse_plan(Plan *p, PyObject *kw) {
    PyObject *params, *inputs, *outputs, *var_high, *alloc, *launch;
    long long device, alignment;
    if (!PyArg_ParseTuple(kw, "OOOLLOOOOOOO", &p->miss, &p->tensor_type, &p->ndarray_type, &device, &alignment,
                          &params, &inputs, &outputs, &var_high, &alloc, &launch, &p->keep))
        return 0;
    Py_INCREF(p->miss); Py_INCREF(p->tensor_type); Py_INCREF(p->ndarray_type); Py_INCREF(p->keep);
    p->torch_device = (long)device;
    if (alignment < 1 || (alignment & (alignment - 1))) return fail("alignment must be a power of two");
    p->alignment = (uint64_t)alignment;
    if (!PyTuple_Check(params) || !PyTuple_Check(inputs) || !PyTuple_Check(outputs) || !PyTuple_Check(var_high) ||
        PyTuple_GET_SIZE(params) > MAX_PARAMS || PyTuple_GET_SIZE(var_high) > MAX_VARS)
        return fail("plan tables must be tuples within the launcher's limits");
    p->n_vars = (int)PyTuple_GET_SIZE(var_high);
    for (int j = 0; j < p->n_vars; j++) {
        long long x;
        if (!as_int(var_high, j, &x)) return 0;
        p->var_high[j] = x;
    }
    p->n_params = (int)PyTuple_GET_SIZE(params);
    for (int i = 0; i < p->n_params; i++)
        if (!parse_param(p, PyTuple_GET_ITEM(params, i), &p->params[i])) return 0;
    p->n_inputs = (int)PyTuple_GET_SIZE(inputs);
    for (int i = 0; i < p->n_inputs; i++) {
        long long x;
        if (!as_int(inputs, i, &x)) return 0;
        if (x < 0 || x >= p->n_params) return fail("input index out of range");
        p->inputs[i] = (int)x;
    }
    p->n_outputs = (int)PyTuple_GET_SIZE(outputs);
    for (int o = 0; o < p->n_outputs; o++) {
        OutRule *out = &p->outputs[o];
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(outputs, o), "iOOi", &out->param, &out->torch_dtype,
                              &out->numpy_dtype, &out->twin))
            return 0;
        Py_INCREF(out->torch_dtype);
        Py_INCREF(out->numpy_dtype);
        if (out->param < 0 || out->param >= p->n_params || p->params[out->param].kind != P_BUFFER)
            return fail("output index out of range");
    }
    if (!PyArg_ParseTuple(alloc, "OOO", &p->empty, &p->empty_like, &p->np_empty)) return 0;
    Py_INCREF(p->empty); Py_INCREF(p->empty_like); Py_INCREF(p->np_empty);
    int n_values = p->n_params + p->n_vars;
    const char *kind;
    PyObject *a, *b, *rest;
    unsigned long long address;
    if (!PyArg_ParseTuple(launch, "sKOOO", &kind, &address, &a, &b, &rest)) return 0;
    p->address = address;
    if (strcmp(kind, "kernel-params") == 0) {
        p->launch_kind = L_KERNEL_PARAMS;
        p->stream = Py_NewRef(a);
        p->failed = Py_NewRef(b);
        if (!PyTuple_Check(rest) || PyTuple_GET_SIZE(rest) > MAX_KERNELS || PyTuple_GET_SIZE(rest) == 0)
            return fail("between 1 and 8 kernels");
        p->n_kernels = (int)PyTuple_GET_SIZE(rest);
        for (int k = 0; k < p->n_kernels; k++)
            if (!parse_kernel(PyTuple_GET_ITEM(rest, k), &p->kernels[k], n_values)) return 0;
        return 1;
    }
    if (strcmp(kind, "packed-call") == 0) {
        p->launch_kind = L_PACKED_CALL;
        p->stream = Py_NewRef(a);
        p->failed = Py_NewRef(b);
        return parse_slots(rest, &p->call, n_values);
    }
    return fail("launch kind must be 'kernel-params' or 'packed-call'");
}

static PyObject *plan_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    Plan *p = PyObject_GC_New(Plan, type);
    if (p == NULL) return NULL;
    memset((char *)p + sizeof(PyObject), 0, sizeof(Plan) - sizeof(PyObject));
    p->vectorcall = plan_call;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "Plan takes positional arguments only");
        Py_DECREF(p);
        return NULL;
    }
    if (!parse_plan(p, args)) {
        Py_DECREF(p);
        return NULL;
    }
    PyObject_GC_Track(p);
    return (PyObject *)p;
}

static PyTypeObject PlanType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_tclaunch.Plan",
    .tp_basicsize = sizeof(Plan),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Plan, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = plan_new,
    .tp_dealloc = plan_dealloc,
    .tp_traverse = plan_traverse,
    .tp_doc = "A kernel's pre-bound launch: check the arguments, allocate the outputs, launch.",
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_tclaunch", "tilecraft's compiled launcher", -1, NULL};

PyMODINIT_FUNC PyInit__tclaunch(void) {
    s_dtype = PyUnicode_InternFromString("dtype");
    s_get_device = PyUnicode_InternFromString("get_device");
    s_is_cpu = PyUnicode_InternFromString("is_cpu");
    s_is_contiguous = PyUnicode_InternFromString("is_contiguous");
    s_data_ptr = PyUnicode_InternFromString("data_ptr");
    s_shape = PyUnicode_InternFromString("shape");
    s_device = PyUnicode_InternFromString("device");
    s_kwnames = Py_BuildValue("(ss)", "dtype", "device");
    if (!s_dtype || !s_is_cpu || !s_get_device || !s_is_contiguous || !s_data_ptr || !s_shape || !s_device || !s_kwnames)
        return NULL;
    if (PyType_Ready(&PlanType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    PyObject *limits = Py_BuildValue("{sisisisisi}", "params", MAX_PARAMS, "vars", MAX_VARS, "dims", MAX_DIMS,
                                     "kernels", MAX_KERNELS, "program", MAX_CODE);
    if (limits == NULL || PyModule_AddObject(m, "LIMITS", limits) < 0 ||
        PyModule_AddObject(m, "Plan", Py_NewRef((PyObject *)&PlanType)) < 0) {
        Py_XDECREF(limits);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
