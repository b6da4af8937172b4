/* The single-state call of rnea, crba, aba, ... and of the frame functions from Python,
   without Python in between. Two types, each standing in front of a public wrapper:

   `Caller` (kanedyn.dynamics.rnea.rnea etc.): called as `f(model, x1, ..., xk)` or
   `f(model, x1, ..., xk, out=r)` with k state
   arrays (and `f_ext=None`, by position or name, where the wrapper has f_ext), where
   each x is a 1-D, aligned, C-contiguous, native float64 ndarray of the model's length
   (q: nq, the others: nv) and r (if not None) a writeable one of the result's shape,
   and the calling thread is the one whose default Data is the model's hot one
   (`model._kd_hot[3]`, the thread ident, see flat.py `_Hot` and data.py), it reads that
   Data's packed buffer (`model._kd_hot[0]`), allocates the result or takes r, and calls the numba kernel through its
   C address (`kernels.c_entry`). What a Caller takes is a row of the kernels'
   entry-point table (kernels/entries.py, `ENTRIES`), passed by `_dispatch.c_front`:
   the length of each state ('q': the model's nq, 'v': its nv), the result's shape
   (fixed sizes, DIM_NV for the model's nv, DIM_NB for its nb) and whether there is
   f_ext; nothing in Caller is particular to one algorithm.

   `FrameCaller` (kanedyn.dynamics.frames.frame_jacobian etc.): called as
   `f(model, x1, ..., xk, frame[, reference[, classical]])`, the last two by position
   or by name, with states as above, a frame whose array P the wrapper has already
   cached on the model (`model._kd_frames[frame][0]`, see data.py `_Frames` and
   frames_kernel.py `frame_params`: P's row 0 gives nq and nv), a reference that is a
   key of the wrapper's table of kernel ops (frames.py `_OPS`) and `classical` True or
   False, it allocates the result (a 6-vector, a 6 x nv matrix, or the pose as the
   views (R (3, 3), p (3,)) of one 12-vector, as the wrapper returns them) and calls
   `frames_kernel.frame_c`, whose address `frames_kernel.c_entry` gives.

   Anything else — a `data=` (any keyword the type does not know), another thread than
   the model's owner (`_kd_hot[3]`, `_kd_frames[frame][2]`), external forces, a batch, a list,
   another dtype, strides, a wrong length, a Model not yet flattened, a frame not yet
   cached, an unknown reference, a keyword the wrapper does not have — goes to the
   Python wrapper unchanged, and so does a call whose kernel returns a non-zero
   status, so that the wrapper raises the error that names the culprit.

   Why: a small robot's whole RNEA or CRBA is ~0.3-0.5 µs of arithmetic; a Python
   wrapper and numba's unboxing of each array argument cost about as much again.
   Here the checks are C macros and the arrays are passed as bare pointers.

   The workspace a kernel writes is the owner thread's Data's (data.py), never shared by
   two threads, so a kernel can run without the GIL. Releasing and taking it back costs
   about 0.1 µs (PyEval_SaveThread/RestoreThread, uncontended), as much as a quarter of a
   small robot's whole call, so Caller releases it only for models of at least
   RELEASE_GIL_NB bodies, whose calls take several µs (with the release from 16 bodies,
   chain20's and the humanoids' calls took 0.06-0.3 µs more in bench/rbd_vs_pinocchio.py,
   docs/benchmarks.md); FrameCaller (whose calls are all short) keeps it. A thread that
   wants its kernels to overlap others' passes data= (the Python wrapper then calls the
   nogil entry point). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

/* int64 kernel(double *buf, double *x1, ..., double *xk, double *out), k = 1 .. MAX_IN */
typedef int64_t (*kernel1)(double *, double *, double *);
typedef int64_t (*kernel2)(double *, double *, double *, double *);
typedef int64_t (*kernel3)(double *, double *, double *, double *, double *);
typedef int64_t (*kernel4)(double *, double *, double *, double *, double *, double *);

#define MAX_IN 4
/* bodies from which Caller runs the kernel without the GIL (see the top comment) */
#define RELEASE_GIL_NB 64
#define MAX_ND 2
/* result dimensions that are the model's: its number of speeds, of bodies, and ten per
   body (the joint torque regressor's columns, identify/regressor.py) */
#define DIM_NV (-1)
#define DIM_NB (-2)
#define DIM_NB10 (-3)

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *fallback; /* the Python wrapper: everything this does not take */
    PyObject *loader;   /* () -> the kernel's address, called once on first use */
    PyObject *dict;     /* __doc__, __name__, __wrapped__ ... of the wrapper */
    void *kernel;
    int nin;            /* state arrays after the model: 1 .. MAX_IN */
    char lengths[MAX_IN]; /* each state's length: 'q' the model's nq, 'v' its nv */
    int nd;             /* the result's dimensions: 1 .. MAX_ND */
    npy_intp shape[MAX_ND]; /* each a size >= 0, or DIM_NV, DIM_NB */
    int fext;           /* an f_ext parameter after the states (taken when None) */
} Caller;

static PyObject *str_hot; /* "_kd_hot" */
static PyObject *str_out; /* "out" */
static PyObject *str_fext; /* "f_ext" */

/* An aligned, C-contiguous, native-endian float64 ndarray of nd dimensions. */
static int
is_f8_contiguous(PyObject *x, int nd)
{
    if (!PyArray_Check(x))
        return 0;
    PyArrayObject *a = (PyArrayObject *)x;
    return PyArray_NDIM(a) == nd && PyArray_TYPE(a) == NPY_DOUBLE && PyArray_ISNOTSWAPPED(a)
           && PyArray_ISALIGNED(a) && PyArray_IS_C_CONTIGUOUS(a);
}

/* A state: 1-D of length n. */
static int
is_state(PyObject *x, npy_intp n)
{
    return is_f8_contiguous(x, 1) && PyArray_DIM((PyArrayObject *)x, 0) == n;
}

/* The caller's out= as the result: writeable, of the result's shape. */
static int
is_result(PyObject *x, int nd, const npy_intp *dims)
{
    if (!is_f8_contiguous(x, nd) || !PyArray_ISWRITEABLE((PyArrayObject *)x))
        return 0;
    for (int k = 0; k < nd; k++)
        if (PyArray_DIM((PyArrayObject *)x, k) != dims[k])
            return 0;
    return 1;
}

static PyObject *
caller_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Caller *self = (Caller *)op;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    /* f(model, x1..xk), and f_ext=None given by position or name where there is one */
    if (nargs != 1 + self->nin
        && !(self->fext && nargs == 2 + self->nin && args[nargs - 1] == Py_None))
        goto general;
    PyObject *given = Py_None; /* out= */
    if (kwnames != NULL) {
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kwnames); k++) {
            PyObject *name = PyTuple_GET_ITEM(kwnames, k), *value = args[nargs + k];
            if (PyUnicode_Compare(name, str_out) == 0)
                given = value;
            else if (!(self->fext && value == Py_None && nargs == 1 + self->nin
                       && PyUnicode_Compare(name, str_fext) == 0))
                goto general; /* (f_ext by position and by name: the wrapper's TypeError) */
        }
    }
    PyObject *hot = PyObject_GetAttr(args[0], str_hot);
    if (hot == NULL) { /* not flattened yet, or not a Model: the wrapper knows */
        PyErr_Clear();
        goto general;
    }
    /* (buf, nv, shape, owner, per_thread); a deep copy of a Model carries an empty tuple.
       Only the owner thread's Data is on the hot tuple: another thread takes the wrapper,
       which finds its own Data (data.py data_of). */
    if (!PyTuple_Check(hot) || PyTuple_GET_SIZE(hot) != 5 || !PyArray_Check(PyTuple_GET_ITEM(hot, 0))
        || !PyLong_CheckExact(PyTuple_GET_ITEM(hot, 3))
        || PyLong_AsUnsignedLong(PyTuple_GET_ITEM(hot, 3)) != PyThread_get_thread_ident()) {
        PyErr_Clear(); /* (an ident that does not fit: not ours) */
        goto general_hot;
    }
    PyArrayObject *buf = (PyArrayObject *)PyTuple_GET_ITEM(hot, 0);
    double *b = (double *)PyArray_DATA(buf);
    /* header: nb, nq, nv */
    npy_intp nb = (npy_intp)b[0], nq = (npy_intp)b[1], nv = (npy_intp)b[2];
    int nd = self->nd;
    npy_intp dims[MAX_ND];
    for (int k = 0; k < nd; k++)
        dims[k] = self->shape[k] == DIM_NV ? nv
                  : self->shape[k] == DIM_NB ? nb
                  : self->shape[k] == DIM_NB10 ? 10 * nb : self->shape[k];
    double *x[MAX_IN];
    for (int k = 0; k < self->nin; k++) {
        if (!is_state(args[1 + k], self->lengths[k] == 'q' ? nq : nv))
            goto general_hot;
        x[k] = (double *)PyArray_DATA((PyArrayObject *)args[1 + k]);
    }
    if (given != Py_None && !is_result(given, nd, dims))
        goto general_hot;
    if (self->kernel == NULL) {
        PyObject *addr = PyObject_CallNoArgs(self->loader);
        if (addr == NULL) {
            Py_DECREF(hot);
            return NULL;
        }
        if (addr == Py_None) { /* still compiling (first_calls.py): the wrapper answers */
            Py_DECREF(addr);
            goto general_hot;
        }
        void *p = PyLong_AsVoidPtr(addr);
        Py_DECREF(addr);
        if (p == NULL) {
            Py_DECREF(hot);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "kanedyn: kernel loader returned a null address");
            return NULL;
        }
        self->kernel = p;
    }
    PyObject *out;
    if (given == Py_None)
        out = PyArray_SimpleNew(nd, dims, NPY_DOUBLE);
    else {
        Py_INCREF(given);
        out = given;
    }
    if (out == NULL) {
        Py_DECREF(hot);
        return NULL;
    }
    double *r = (double *)PyArray_DATA((PyArrayObject *)out);
    int64_t status;
    /* the arrays stay alive without the GIL: the caller holds x and out, `hot` holds buf */
    PyThreadState *released = nb >= RELEASE_GIL_NB ? PyEval_SaveThread() : NULL;
    switch (self->nin) {
    case 1: status = ((kernel1)self->kernel)(b, x[0], r); break;
    case 2: status = ((kernel2)self->kernel)(b, x[0], x[1], r); break;
    case 3: status = ((kernel3)self->kernel)(b, x[0], x[1], x[2], r); break;
    default: status = ((kernel4)self->kernel)(b, x[0], x[1], x[2], x[3], r); break;
    }
    if (released != NULL)
        PyEval_RestoreThread(released);
    Py_DECREF(hot);
    if (status == 0)
        return out;
    Py_DECREF(out); /* the wrapper runs it again and raises the error that fits */
    goto general;
general_hot:
    Py_DECREF(hot);
general:
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

/* Caller(fallback, loader, inputs, result, fext=False): `inputs` a str, one character
   per state array ('q': of the model's nq entries, 'v': of its nv); `result` a tuple of
   the result's dimensions, each a size >= 0 or DIM_NV (-1, the model's nv), DIM_NB
   (-2, its nb) or DIM_NB10 (-3, 10 nb). _dispatch.c_front makes them from a row of the
   entry-point table (_dispatch.c_front_of from its arguments). */
static PyObject *
caller_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    /* retry: accepted (and always so) since the loader may answer None, "not yet" */
    static char *kwlist[] = {"fallback", "loader", "inputs", "result", "fext", "retry", NULL};
    PyObject *fallback, *loader, *inputs, *result;
    int fext = 0, retry = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOUO!|pp:Caller", kwlist, &fallback, &loader,
                                     &inputs, &PyTuple_Type, &result, &fext, &retry))
        return NULL;
    Py_ssize_t nin = PyUnicode_GET_LENGTH(inputs), nd = PyTuple_GET_SIZE(result);
    if (nin < 1 || nin > MAX_IN) {
        PyErr_Format(PyExc_ValueError, "Caller: 1 to %d state arrays, got %zd", MAX_IN, nin);
        return NULL;
    }
    char lengths[MAX_IN];
    for (Py_ssize_t k = 0; k < nin; k++) {
        Py_UCS4 c = PyUnicode_READ_CHAR(inputs, k);
        if (c != 'q' && c != 'v') {
            PyErr_Format(PyExc_ValueError, "Caller: inputs must be 'q' or 'v' each, got %R",
                         inputs);
            return NULL;
        }
        lengths[k] = (char)c;
    }
    if (nd < 1 || nd > MAX_ND) {
        PyErr_Format(PyExc_ValueError, "Caller: a result of 1 to %d dimensions, got %R", MAX_ND,
                     result);
        return NULL;
    }
    npy_intp shape[MAX_ND];
    for (Py_ssize_t k = 0; k < nd; k++) {
        long d = PyLong_AsLong(PyTuple_GET_ITEM(result, k));
        if (d == -1 && PyErr_Occurred())
            return NULL;
        if (d < DIM_NB10) {
            PyErr_Format(PyExc_ValueError, "Caller: a result dimension is a size >= 0, %d (nv), "
                         "%d (nb) or %d (10 nb), got %ld", DIM_NV, DIM_NB, DIM_NB10, d);
            return NULL;
        }
        shape[k] = (npy_intp)d;
    }
    if (!PyCallable_Check(fallback) || !PyCallable_Check(loader)) {
        PyErr_SetString(PyExc_TypeError, "Caller: fallback and loader must be callable");
        return NULL;
    }
    Caller *self = (Caller *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = caller_vectorcall;
    Py_INCREF(fallback);
    self->fallback = fallback;
    Py_INCREF(loader);
    self->loader = loader;
    self->dict = NULL;
    self->kernel = NULL;
    self->nin = (int)nin;
    memcpy(self->lengths, lengths, sizeof lengths);
    self->nd = (int)nd;
    memcpy(self->shape, shape, sizeof shape);
    self->fext = fext;
    return (PyObject *)self;
}

static int
caller_traverse(Caller *self, visitproc visit, void *arg)
{
    Py_VISIT(self->fallback);
    Py_VISIT(self->loader);
    Py_VISIT(self->dict);
    return 0;
}

static int
caller_clear(Caller *self)
{
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->loader);
    Py_CLEAR(self->dict);
    return 0;
}

static void
caller_dealloc(Caller *self)
{
    PyObject_GC_UnTrack(self);
    caller_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
caller_repr(Caller *self)
{
    return PyUnicode_FromFormat("<fast path of %R>", self->fallback);
}

/* pickled by reference, as a function is: the name in its module (set from the wrapper) */
static PyObject *
caller_reduce(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyObject_GetAttrString(self, "__qualname__");
}

static PyMethodDef caller_methods[] = {
    {"__reduce__", caller_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef caller_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject CallerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kanedyn.dynamics._fastcall.Caller",
    .tp_basicsize = sizeof(Caller),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "Caller(fallback, loader, inputs, result, fext=False): a single-state fast path "
              "in front of fallback, for a row of the kernels' entry-point table (see _fastcall.c).",
    .tp_new = caller_new,
    .tp_dealloc = (destructor)caller_dealloc,
    .tp_traverse = (traverseproc)caller_traverse,
    .tp_clear = (inquiry)caller_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Caller, vectorcall),
    .tp_dictoffset = offsetof(Caller, dict),
    .tp_repr = (reprfunc)caller_repr,
    .tp_methods = caller_methods,
    .tp_getset = caller_getset,
};

/* --- FrameCaller: the frame functions (frames.py) --------------------------------- */

typedef int64_t (*frame_kernel)(double *P, double *q, double *v, double *a, int64_t op,
                                double *res, double *J);

/* what a FrameCaller returns */
enum { RESULT_POSE = 0, RESULT_VECTOR = 1, RESULT_MATRIX = 2 };

/* columns of row 0 of a frame's array P (frames_kernel.py P_NB, P_NQ, P_NV) */
#define P_NB 13
#define P_NQ 14
#define P_NV 15

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *fallback;  /* the Python wrapper: everything this does not take */
    PyObject *loader;    /* () -> the address of frames_kernel.frame_c, called once */
    PyObject *dict;      /* __doc__, __name__, __wrapped__ ... of the wrapper */
    PyObject *params;    /* names of the parameters after the states: frame[, reference[, classical]] */
    PyObject *reference; /* the default reference */
    PyObject *ops;       /* reference -> kernel op (with classical=True, its default) */
    PyObject *spatial_ops; /* reference -> kernel op with classical=False, or NULL */
    void *kernel;
    int nin;             /* state arrays after the model: 1, 2 or 3 */
    int result;          /* RESULT_POSE, RESULT_VECTOR or RESULT_MATRIX */
} FrameCaller;

static PyObject *str_frames; /* "_kd_frames" */

/* The index of keyword `name` among `params` (interned strings: mostly the same object), or -1. */
static Py_ssize_t
param_index(PyObject *params, PyObject *name)
{
    Py_ssize_t n = PyTuple_GET_SIZE(params);
    for (Py_ssize_t j = 0; j < n; j++)
        if (PyTuple_GET_ITEM(params, j) == name)
            return j;
    for (Py_ssize_t j = 0; j < n; j++)
        if (PyUnicode_Compare(PyTuple_GET_ITEM(params, j), name) == 0)
            return j;
    return -1;
}

/* A view of `nd` dims of base's data from entry `offset` on (base's reference is taken). */
static PyObject *
view_of(PyObject *base, npy_intp offset, int nd, npy_intp *dims)
{
    double *data = (double *)PyArray_DATA((PyArrayObject *)base) + offset;
    PyObject *v = PyArray_New(&PyArray_Type, nd, dims, NPY_DOUBLE, NULL, data, 0, NPY_ARRAY_CARRAY,
                              NULL);
    if (v == NULL)
        return NULL;
    Py_INCREF(base);
    if (PyArray_SetBaseObject((PyArrayObject *)v, base) < 0) { /* (it released base) */
        Py_DECREF(v);
        return NULL;
    }
    return v;
}

static PyObject *
frame_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    FrameCaller *self = (FrameCaller *)op;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t npar = PyTuple_GET_SIZE(self->params);
    /* model, the states by position; frame, reference, classical by position or name */
    if (nargs < 1 + self->nin || nargs > 1 + self->nin + npar)
        goto general;
    PyObject *given[3] = {NULL, NULL, NULL};
    for (Py_ssize_t k = 1 + self->nin; k < nargs; k++)
        given[k - 1 - self->nin] = args[k];
    if (kwnames != NULL) {
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kwnames); k++) {
            Py_ssize_t j = param_index(self->params, PyTuple_GET_ITEM(kwnames, k));
            if (j < 0 || given[j] != NULL) /* the wrapper's TypeError */
                goto general;
            given[j] = args[nargs + k];
        }
    }
    if (given[0] == NULL)
        goto general;
    PyObject *table = self->ops;
    if (given[2] == Py_False && self->spatial_ops != NULL)
        table = self->spatial_ops;
    else if (given[2] != NULL && given[2] != Py_True)
        goto general; /* (another truth value: the wrapper decides) */
    PyObject *code = PyDict_GetItemWithError(table, given[1] != NULL ? given[1] : self->reference);
    if (code == NULL) { /* an unknown or unhashable reference: the wrapper's error */
        PyErr_Clear();
        goto general;
    }
    int64_t kernel_op = PyLong_AsLongLong(code);
    if (kernel_op == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        goto general;
    }
    PyObject *frames = PyObject_GetAttr(args[0], str_frames);
    if (frames == NULL) { /* no frame cached yet, or not a Model */
        PyErr_Clear();
        goto general;
    }
    PyObject *hit = PyDict_Check(frames) ? PyDict_GetItemWithError(frames, given[0]) : NULL;
    if (hit == NULL) { /* not cached yet (or unhashable): the wrapper resolves it */
        PyErr_Clear();
        Py_DECREF(frames);
        goto general;
    }
    /* (P, shape, owner): P is the owner thread's (data.py _Frames) */
    PyObject *P = PyTuple_Check(hit) && PyTuple_GET_SIZE(hit) == 3 ? PyTuple_GET_ITEM(hit, 0) : NULL;
    if (P != NULL && (!PyLong_CheckExact(PyTuple_GET_ITEM(hit, 2))
                      || PyLong_AsUnsignedLong(PyTuple_GET_ITEM(hit, 2))
                             != PyThread_get_thread_ident())) {
        PyErr_Clear();
        P = NULL;
    }
    if (P == NULL || !is_f8_contiguous(P, 2) || PyArray_DIM((PyArrayObject *)P, 1) <= P_NV) {
        Py_DECREF(frames);
        goto general;
    }
    /* held for the call: allocating may run a finalizer that empties the cache */
    Py_INCREF(P);
    Py_DECREF(frames);
    double *Pd = (double *)PyArray_DATA((PyArrayObject *)P);
    npy_intp nv = (npy_intp)Pd[P_NV];
    if (PyArray_DIM((PyArrayObject *)P, 0) != 3 * (npy_intp)Pd[P_NB] + 7) /* (param_rows) */
        goto general_P;
    double *x[3];
    for (int k = 0; k < self->nin; k++) {
        if (!is_state(args[1 + k], k == 0 ? (npy_intp)Pd[P_NQ] : nv))
            goto general_P;
        x[k] = (double *)PyArray_DATA((PyArrayObject *)args[1 + k]);
    }
    for (int k = self->nin; k < 3; k++)
        x[k] = x[0]; /* not read by this op (frame_c builds a view of it all the same) */
    if (self->kernel == NULL) {
        PyObject *addr = PyObject_CallNoArgs(self->loader);
        if (addr == NULL) {
            Py_DECREF(P);
            return NULL;
        }
        if (addr == Py_None) { /* still compiling (first_calls.py): the wrapper answers */
            Py_DECREF(addr);
            goto general_P;
        }
        void *p = PyLong_AsVoidPtr(addr);
        Py_DECREF(addr);
        if (p == NULL) {
            Py_DECREF(P);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "kanedyn: kernel loader returned a null address");
            return NULL;
        }
        self->kernel = p;
    }
    npy_intp dims[2] = {6, nv};
    PyObject *out;
    if (self->result == RESULT_MATRIX)
        out = PyArray_SimpleNew(2, dims, NPY_DOUBLE);
    else {
        dims[0] = self->result == RESULT_POSE ? 12 : 6;
        out = PyArray_SimpleNew(1, dims, NPY_DOUBLE);
    }
    if (out == NULL) {
        Py_DECREF(P);
        return NULL;
    }
    double *r = (double *)PyArray_DATA((PyArrayObject *)out);
    /* a Jacobian is written to J (res unused), a vector or pose to res (J unused) */
    int64_t status = ((frame_kernel)self->kernel)(Pd, x[0], x[1], x[2], kernel_op, r, r);
    Py_DECREF(P);
    if (status != 0) {
        Py_DECREF(out); /* the wrapper runs it again and raises the error that fits */
        goto general;
    }
    if (self->result != RESULT_POSE)
        return out;
    /* (R_F, p_F): res[:9].reshape(3, 3) and res[9:12], as the wrapper returns them */
    npy_intp d33[2] = {3, 3}, d3[1] = {3};
    PyObject *R = view_of(out, 0, 2, d33);
    PyObject *p = R == NULL ? NULL : view_of(out, 9, 1, d3);
    Py_DECREF(out);
    if (p == NULL) {
        Py_XDECREF(R);
        return NULL;
    }
    PyObject *pose = PyTuple_New(2);
    if (pose == NULL) {
        Py_DECREF(R);
        Py_DECREF(p);
        return NULL;
    }
    PyTuple_SET_ITEM(pose, 0, R);
    PyTuple_SET_ITEM(pose, 1, p);
    return pose;
general_P:
    Py_DECREF(P);
general:
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

static PyObject *
frame_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    /* retry: accepted (and always so) since the loader may answer None, "not yet" */
    static char *kwlist[] = {"fallback", "loader", "nin", "result", "params", "reference",
                             "ops", "spatial_ops", "retry", NULL};
    PyObject *fallback, *loader, *params, *reference, *ops, *spatial_ops = Py_None;
    int nin, result, retry = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOiiO!OO!|Op:FrameCaller", kwlist, &fallback,
                                     &loader, &nin, &result, &PyTuple_Type, &params, &reference,
                                     &PyDict_Type, &ops, &spatial_ops, &retry))
        return NULL;
    if (nin < 1 || nin > 3) {
        PyErr_Format(PyExc_ValueError, "FrameCaller: nin must be 1, 2 or 3, got %d", nin);
        return NULL;
    }
    if (result != RESULT_POSE && result != RESULT_VECTOR && result != RESULT_MATRIX) {
        PyErr_Format(PyExc_ValueError, "FrameCaller: result must be 0 (pose), 1 (vector) or "
                     "2 (matrix), got %d", result);
        return NULL;
    }
    Py_ssize_t npar = PyTuple_GET_SIZE(params);
    if (npar < 1 || npar > 3) {
        PyErr_Format(PyExc_ValueError, "FrameCaller: params must name 1 to 3 parameters "
                     "(frame, reference, classical), got %zd", npar);
        return NULL;
    }
    for (Py_ssize_t j = 0; j < npar; j++)
        if (!PyUnicode_Check(PyTuple_GET_ITEM(params, j))) {
            PyErr_SetString(PyExc_TypeError, "FrameCaller: params must be strings");
            return NULL;
        }
    if (spatial_ops == Py_None)
        spatial_ops = NULL;
    else if (!PyDict_Check(spatial_ops)) {
        PyErr_SetString(PyExc_TypeError, "FrameCaller: spatial_ops must be a dict or None");
        return NULL;
    }
    if ((npar == 3) != (spatial_ops != NULL)) {
        PyErr_SetString(PyExc_ValueError, "FrameCaller: spatial_ops goes with a third "
                        "parameter (classical), and only with it");
        return NULL;
    }
    if (!PyCallable_Check(fallback) || !PyCallable_Check(loader)) {
        PyErr_SetString(PyExc_TypeError, "FrameCaller: fallback and loader must be callable");
        return NULL;
    }
    FrameCaller *self = (FrameCaller *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = frame_vectorcall;
    Py_INCREF(fallback);
    self->fallback = fallback;
    Py_INCREF(loader);
    self->loader = loader;
    self->dict = NULL;
    Py_INCREF(params);
    self->params = params;
    Py_INCREF(reference);
    self->reference = reference;
    Py_INCREF(ops);
    self->ops = ops;
    Py_XINCREF(spatial_ops);
    self->spatial_ops = spatial_ops;
    self->kernel = NULL;
    self->nin = nin;
    self->result = result;
    return (PyObject *)self;
}

static int
frame_traverse(FrameCaller *self, visitproc visit, void *arg)
{
    Py_VISIT(self->fallback);
    Py_VISIT(self->loader);
    Py_VISIT(self->dict);
    Py_VISIT(self->params);
    Py_VISIT(self->reference);
    Py_VISIT(self->ops);
    Py_VISIT(self->spatial_ops);
    return 0;
}

static int
frame_clear(FrameCaller *self)
{
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->loader);
    Py_CLEAR(self->dict);
    Py_CLEAR(self->params);
    Py_CLEAR(self->reference);
    Py_CLEAR(self->ops);
    Py_CLEAR(self->spatial_ops);
    return 0;
}

static void
frame_dealloc(FrameCaller *self)
{
    PyObject_GC_UnTrack(self);
    frame_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
frame_repr(FrameCaller *self)
{
    return PyUnicode_FromFormat("<fast path of %R>", self->fallback);
}

static PyTypeObject FrameCallerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kanedyn.dynamics._fastcall.FrameCaller",
    .tp_basicsize = sizeof(FrameCaller),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "FrameCaller(fallback, loader, nin, result, params, reference, ops, "
              "spatial_ops=None): a single-state fast path of a frame function in front of "
              "fallback (see _fastcall.c).",
    .tp_new = frame_new,
    .tp_dealloc = (destructor)frame_dealloc,
    .tp_traverse = (traverseproc)frame_traverse,
    .tp_clear = (inquiry)frame_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(FrameCaller, vectorcall),
    .tp_dictoffset = offsetof(FrameCaller, dict),
    .tp_repr = (reprfunc)frame_repr,
    .tp_methods = caller_methods,
    .tp_getset = caller_getset,
};

static struct PyModuleDef fastcall_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "kanedyn.dynamics._fastcall",
    .m_doc = "Single-state calls of the recursive algorithms and the frame functions from "
             "Python, past the Python wrapper (see the comment at the top of _fastcall.c).",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__fastcall(void)
{
    import_array();
    if (PyType_Ready(&CallerType) < 0 || PyType_Ready(&FrameCallerType) < 0)
        return NULL;
    str_hot = PyUnicode_InternFromString("_kd_hot");
    str_out = PyUnicode_InternFromString("out");
    str_fext = PyUnicode_InternFromString("f_ext");
    str_frames = PyUnicode_InternFromString("_kd_frames");
    if (str_hot == NULL || str_out == NULL || str_fext == NULL || str_frames == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&fastcall_module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&CallerType);
    if (PyModule_AddObject(m, "Caller", (PyObject *)&CallerType) < 0) {
        Py_DECREF(&CallerType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&FrameCallerType);
    if (PyModule_AddObject(m, "FrameCaller", (PyObject *)&FrameCallerType) < 0) {
        Py_DECREF(&FrameCallerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
