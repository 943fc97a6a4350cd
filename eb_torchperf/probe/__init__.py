"""Code that runs inside the *target* interpreter.

Everything in this sub-package imports only the standard library at import time;
torch (and threadpoolctl, copied next to it by the runner) are imported lazily inside
functions.  The runner copies this folder to a temporary directory as the top-level
package `ebtp_probe`, so imports between its modules are relative.  Importing it has
no side effects.
"""
