/* A stand-in for Windows' bcryptprimitives.dll, for Wine releases that lack
 * it (before 9.0): Rust's standard library draws its random keys from its
 * ProcessPrng, which this forwards to RtlGenRandom (advapi32's
 * SystemFunction036). Only scripts/emulated.sh builds it, into the Wine
 * prefix it runs the tests in; vkcl never ships it. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
