# Writes OUT: the C source IN with every CK_TAG_BEGIN(...); / CK_TAG_BEGIN_STEP(...); /
# CK_TAG_END(...); invocation deleted in place (line breaks kept, so line
# numbers do not move). tags_free_objects.cmake compares the objects.
file(READ "${IN}" text)
string(REGEX REPLACE "CK_TAG_(BEGIN_STEP|BEGIN|END)[ \t]*\\([^;]*\\)[ \t]*;" "" text "${text}")
file(WRITE "${OUT}.tmp" "${text}")
file(RENAME "${OUT}.tmp" "${OUT}")
