# node-maint test bed: fault hooks for the maintainer scripts of the +nmtest1 packages (Debian's containerd +deb12u3
# and docker.io, repacked).
# Every hook is off unless its file exists in /run/node-maint-test-faults; tests turn them on and off.
F=/run/node-maint-test-faults
# preinst-slow: the unpack stops here for 30 s, so a test can kill the run (or dpkg itself) in the middle of it.
if [ -e "$F/preinst-slow" ]; then touch "$F/preinst-started"; sleep 30; fi
# preinst-fail: the unpack fails; dpkg unwinds it and the installed version stays.
if [ -e "$F/preinst-fail" ]; then echo "node-maint test bed: preinst fails on purpose ($F/preinst-fail)" >&2; exit 1; fi
# postinst-fail: the new version is unpacked but cannot be configured: dpkg leaves it half-configured.
if [ "$1" = configure ] && [ -e "$F/postinst-fail" ]; then echo "node-maint test bed: postinst fails on purpose ($F/postinst-fail)" >&2; exit 1; fi
