# Writes OUT: the C source IN with every CK_SPAN_BEGIN(...); / CK_SPAN_BEGIN_STEP(...); /
# CK_SPAN_END(...); invocation deleted in place (line breaks kept, so line
# numbers do not move). spans_free_objects.cmake compares the objects.
file(READ "${IN}" text)
string(REGEX REPLACE "CK_SPAN_(BEGIN_STEP|BEGIN|END)[ \t]*\\([^;]*\\)[ \t]*;" "" text "${text}")
file(WRITE "${OUT}.tmp" "${text}")
file(RENAME "${OUT}.tmp" "${OUT}")
