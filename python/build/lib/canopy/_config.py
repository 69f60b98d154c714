# written by setup.py: the libcanopy this package was installed against
LIBRARY = '/tmp/pyinst/usr/local/lib/libcanopy.so'
