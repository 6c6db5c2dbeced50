/* Where a slotted Python class keeps its attributes, for the compiled modules that build
 * its objects field by field (what the class's constructor would only store). */

#ifndef MESHTOPO_SLOTS_H
#define MESHTOPO_SLOTS_H

#include <Python.h>

#include <structmember.h>

/* Where the slot called name of type keeps its value, or -1. */
static inline Py_ssize_t
slot_offset(PyTypeObject *type, PyObject *name)
{
    for (PyMemberDef *member = type->tp_members; member && member->name; member++)
        if (member->type == T_OBJECT_EX && PyUnicode_CompareWithASCIIString(name, member->name) == 0)
            return member->offset;
    return -1;
}

/* The offsets of the slots named by the tuple names into offsets (as many as it holds);
 * -1 with TypeError set when type lacks one. */
static inline int
slot_offsets(PyTypeObject *type, PyObject *names, Py_ssize_t *offsets)
{
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(names); k++) {
        offsets[k] = slot_offset(type, PyTuple_GET_ITEM(names, k));
        if (offsets[k] < 0) {
            PyErr_Format(PyExc_TypeError, "%R has no slot %R", type, PyTuple_GET_ITEM(names, k));
            return -1;
        }
    }
    return 0;
}

#define SLOT(object, offset) (*(PyObject **)((char *)(object) + (offset)))

#endif
