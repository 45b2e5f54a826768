/* What collkit's outputs call MPI's objects: ops, datatypes (the profile's
 * and the spec's names), the library a run used. Written out by the profile,
 * the autotuner's rules file and the rules' library check. */
#include "ck_preload.h"
#include "profile.h"

#include <string.h>

/* The spec's datatype names (collkit-bench fills these): signed integers by
 * size, the IEEE floats. Anything else (unsigned, pairs, complex, derived)
 * has none: a campaign cannot measure it as such. */
static const char *spec_dtype(MPI_Datatype dt)
{
    if (dt == MPI_DATATYPE_NULL) return NULL;
    const MPI_Datatype ints[] = {MPI_SIGNED_CHAR, MPI_SHORT, MPI_INT, MPI_LONG, MPI_LONG_LONG, MPI_INT8_T,
                                 MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_INTEGER};
    const MPI_Datatype floats[] = {MPI_FLOAT, MPI_REAL};
    const MPI_Datatype doubles[] = {MPI_DOUBLE, MPI_DOUBLE_PRECISION};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (ints[i] == MPI_DATATYPE_NULL || dt != ints[i]) continue;
        int size = 0;
        if (PMPI_Type_size(dt, &size) != MPI_SUCCESS) return NULL;
        return size == 1 ? "int8" : size == 4 ? "int32" : size == 8 ? "int64" : NULL;
    }
    for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++)
        if (floats[i] != MPI_DATATYPE_NULL && dt == floats[i]) return "float";
    for (size_t i = 0; i < sizeof doubles / sizeof doubles[0]; i++)
        if (doubles[i] != MPI_DATATYPE_NULL && dt == doubles[i]) return "double";
    return NULL;
}

const char *ckp_op_name(MPI_Op op)
{
    if (op == MPI_OP_NULL) return NULL;
    const ck_op_desc *d = ck_op_of(op);
    return d ? d->name : "user";
}

void ckp_profile_names(ckp_class *e, MPI_Datatype dt, MPI_Op op)
{
    char name[MPI_MAX_OBJECT_NAME] = "";
    int len = 0;
    /* A spec names the datatype of reductions only (profile_file.py: dtype). */
    e->dtype = op != MPI_OP_NULL ? spec_dtype(dt) : NULL;
    e->op_name = ckp_op_name(op);
    if (dt == MPI_DATATYPE_NULL) {
        strcpy(e->datatype, "none");
        return;
    }
    if (PMPI_Type_get_name(dt, name, &len) != MPI_SUCCESS || len == 0) {
        /* An unnamed type: derived unless MPI says it is a named one. */
        strcpy(e->datatype, ckp_type_named(dt) ? "named" : "derived");
        return;
    }
    /* Cut to the table's width (MPI_MAX_OBJECT_NAME is 64 or 128). */
    size_t n = strlen(name) < sizeof e->datatype - 1 ? strlen(name) : sizeof e->datatype - 1;
    memcpy(e->datatype, name, n);
    e->datatype[n] = '\0';
}

/* The first line of MPI_Get_library_version: what the rules were learned on. */
void ckp_library_line(char *out, size_t len)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    v[0] = '\0';
    if (MPI_Get_library_version(v, &n) != MPI_SUCCESS) v[0] = '\0';
    v[sizeof v - 1] = '\0';
    char *nl = strpbrk(v, "\r\n");
    if (nl) *nl = '\0';
    size_t end = strlen(v);
    while (end && (v[end - 1] == ' ' || v[end - 1] == '\t')) v[--end] = '\0';
    snprintf(out, len, "%s", v);
}
