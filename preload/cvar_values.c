/* A value line of an MPICH CVAR's description (cvar_values.h). */
#include "cvar_values.h"

#include <ctype.h>

int ckp_cvar_value_line(const char *line, size_t len, size_t *name_len, size_t *text_at)
{
    size_t w = 0;
    while (w < len && (islower((unsigned char)line[w]) || isdigit((unsigned char)line[w]) || line[w] == '_')) w++;
    size_t d = w;
    while (d < len && line[d] == ' ') d++;
    if (w == 0 || w > CKP_CVAR_NAME_MAX || d == w || d + 1 >= len || line[d] != '-' || line[d + 1] != ' ')
        return 0;
    size_t t = d + 2;
    while (t < len && line[t] == ' ') t++;
    *name_len = w;
    *text_at = t;
    return 1;
}
