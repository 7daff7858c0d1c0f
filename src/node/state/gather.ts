// The one round trip that brings a node's whole state back: a POSIX sh script whose output is framed as sections
// ("@@name args") and content lines ("|text"). It reads files with one find and one awk for many directories, never a
// command per file, and frames its output once: each process it makes is one more fork on a busy production node.
import { randomBytes } from 'node:crypto';
import { DPKG_INTERRUPTED_SCRIPT, installedScript, LOCK_HOLDERS_SCRIPT } from '../packages/index.js';
import { ownPidsScript } from '../processes.js';

export const STATE_DIRS = {
  /** host-local's default dataDir; a network's own `ipam.dataDir` (kindnetd: /run/cni-ipam-state) is read too. */
  ipam: '/var/lib/cni/networks',
  cniCaches: ['/var/lib/cni/cache/results', '/var/lib/cni/results'],
  checkpoints: { 'cri-dockerd': '/var/lib/cri-dockerd/sandbox', dockershim: '/var/lib/dockershim/sandbox' },
  cniConf: '/etc/cni/net.d',
  cniBin: ['/opt/cni/bin', '/usr/lib/cni', '/usr/libexec/cni'],
  netns: '/var/run/netns',
  backups: '/var/lib/node-maint/backups',
} as const;

export const UNITS = ['kubelet', 'containerd', 'docker', 'cri-docker'] as const;
export const PACKAGES = ['containerd', 'containerd.io', 'docker.io', 'docker-ce', 'docker-ce-cli', 'runc', 'cri-dockerd', 'kubelet'];

const DOCKER_FORMAT = [
  '{{.ID}}', '{{.State}}', '{{.Label "io.kubernetes.docker.type"}}', '{{.Label "io.kubernetes.pod.uid"}}',
  '{{.Label "io.kubernetes.pod.namespace"}}', '{{.Label "io.kubernetes.pod.name"}}', '{{.Label "io.kubernetes.sandbox.id"}}',
  '{{.Label "io.kubernetes.container.name"}}', '{{.CreatedAt}}',
].join('\t');

/** The shell function `files DIR...` (it marks sections with $M). */
export const FILES_FUNCTION = `# files DIR...: each directory there is, its listing (name, size, mtime) and every small file's content, in one find
# and one awk for them all (find lists a directory before what is in it; awk reads the files itself).
files() {
  [ $# -gt 0 ] || return 0
  find "$@" -maxdepth 1 \\( -type d -printf 'd\\t%d\\t%p\\n' -o -type f -printf 'f\\t%d\\t%p\\t%f\\t%s\\t%T@\\n' \\) 2>/dev/null | awk -F'\\t' -v m="$M" '
    function contents(   i, line) { for (i = 1; i <= n; i++) { print m "file " small[i]; while ((getline line < small[i]) > 0) print line; close(small[i]) } n = 0 }
    $1 == "d" && $2 == 0 { contents(); print m "dir " $3; next }
    $1 == "f" && $2 == 1 { print $4 "\\t" $5 "\\t" $6; if ($5 <= 261120 && $4 != "lock") small[++n] = $3 }
    END { contents() }'
}`;

/** Content lines get "|", markers ("@@<marker> name") become "@@name": the framing parse.ts reads. */
export const frameScript = (marker: string) => `awk -v m='@@${marker} ' 'BEGIN { n = length(m) }
  { s = $0; while ((i = index(s, m)) > 1) { print "|" substr(s, 1, i - 1); s = substr(s, i) } if (i == 1) print "@@" substr(s, n + 1); else print "|" s }'`;

/**
 * Sections are marked in the script by a random word no file on the node can know, and framed once at the end by one
 * awk: a marker that follows content without a newline still starts its own line, and no content can pose as one.
 */
export function gatherScript(marker = randomBytes(8).toString('hex'), packages: string[] = []): string {
  return `
set +e
export LC_ALL=C
M='@@${marker} '
sec() { printf '%s%s\\n' "$M" "$*"; }
${FILES_FUNCTION}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
now=$(date +%s)
gather() {
sec meta
read -r host < /proc/sys/kernel/hostname; read -r kernel < /proc/sys/kernel/osrelease
printf 'hostname=%s\\nnow=%s\\nuid=%s\\nkernel=%s\\n' "$host" "$now" "$(id -u)" "$kernel"
sec os-release
cat /etc/os-release 2>/dev/null
sec tools
for t in apt-get dpkg-query docker crictl ctr systemctl ip flock nsenter; do command -v "$t" >/dev/null 2>&1 && echo "$t"; done
sec packages
${installedScript([...new Set([...PACKAGES, ...packages])])}
sec dpkg-locks
${LOCK_HOLDERS_SCRIPT}
sec dpkg-journal
${DPKG_INTERRUPTED_SCRIPT}
sec services
# One systemctl for all units: it prints their properties in the order asked, a blank line between two units.
systemctl show -p LoadState,ActiveState,MainPID,ExecStart ${UNITS.join(' ')} 2>/dev/null \\
  | awk -v units='${UNITS.join(' ')}' 'BEGIN { n = split(units, u, " "); i = 1; print "Unit=" u[1] } /^$/ { if (++i <= n) print "Unit=" u[i]; next } { print }'
sec processes
for n in kubelet cri-dockerd containerd dockerd; do
  for p in $(${ownPidsScript('"$n"')}); do printf '%s\\t%s\\t' "$n" "$p"; tr '\\0' ' ' < "/proc/$p/cmdline"; echo; done
done
# The unit that runs kubelet: the service systemd names as its main PID (kubelet may run under another unit than
# kubelet.service, snap.kubelet.daemon; move itself out of its unit's cgroup with --kubelet-cgroups; or run as a
# transient unit of systemd-run, which has no unit file to start it from again), else the one its systemd cgroup
# (cgroup v1's name=systemd line, or v2's) names, or none.
sec kubelet-unit
for p in $(${ownPidsScript('kubelet')}); do
  s=$(systemctl show -p Id -p MainPID -p Transient -p FragmentPath '*.service' 2>/dev/null | awk -v p="$p" '
    /^$/ { if (pid == p) { print id "\\t" transient "\\t" frag; exit } id = ""; pid = ""; transient = ""; frag = "" }
    /^Id=/ { id = substr($0, 4) } /^MainPID=/ { pid = substr($0, 9) } /^Transient=/ { transient = substr($0, 11) } /^FragmentPath=/ { frag = substr($0, 14) }
    END { if (pid == p) print id "\\t" transient "\\t" frag }' | head -n 1)
  awk -F: -v p="$p" -v s="$s" '$2 == "name=systemd" || ($1 == "0" && $2 == "") { cg = $3; n = split(cg, part, "/"); for (i = 1; i <= n; i++) if (part[i] ~ /\\.service$/) unit = part[i]; exit }
    END { printf "%s\\t%s\\t%s\\t%s\\n", p, unit, cg, s }' "/proc/$p/cgroup" 2>/dev/null; break
done
# kubeadm keeps kubelet's flags in an environment file its unit expands, and the runtime endpoint in its config.
sec kubelet-env
for f in /var/lib/kubelet/kubeadm-flags.env /etc/default/kubelet; do [ -f "$f" ] && cat "$f"; done
sec kubelet-config
grep -hE '^(containerRuntimeEndpoint|podInfraContainerImage):' /var/lib/kubelet/config.yaml 2>/dev/null
sec disk
df -Pk / /var/lib /var/cache 2>/dev/null
sec cni-bin
for d in ${STATE_DIRS.cniBin.join(' ')}; do [ -x "$d/host-local" ] && echo "$d"; done
files ${STATE_DIRS.cniConf}
# host-local keeps reservations under <dataDir>/<network>: the default, and every dataDir the CNI configs name.
# Only plain absolute paths are looked at (and ever cleared); any other dataDir is reported, for preflight to refuse.
sec ipam-datadirs
datadirs=$(grep -rhoE '"dataDir"[[:space:]]*:[[:space:]]*"[^"]+"' ${STATE_DIRS.cniConf} 2>/dev/null | sed -E 's/.*"([^"]+)"$/\\1/' | sort -u)
echo "$datadirs"
sec ipam-roots
ipam_roots=$({ echo ${STATE_DIRS.ipam}; echo "$datadirs" | grep -E '^/[A-Za-z0-9._/-]+$' | grep -vE '(^|/)\\.\\.?(/|$)' | sed 's:/*$::' | grep -v '^$'; } | sort -u)
echo "$ipam_roots"
# The three big parts (IPAM, caches and checkpoints, the runtime) run side by side; their output is joined in order.
{ set --; for r in $ipam_roots; do for d in "$r"/*/; do [ -d "$d" ] && set -- "$@" "\${d%/}"; done; done; files "$@"; } > "$tmp/ipam" &
files ${[...STATE_DIRS.cniCaches, STATE_DIRS.checkpoints['cri-dockerd'], STATE_DIRS.checkpoints.dockershim].join(' ')} > "$tmp/cache" &
{
# A listing that failed (timed out, refused) leaves its section out: "did not answer", never "nothing there".
if command -v docker >/dev/null 2>&1 && timeout 60 docker ps -a --no-trunc --filter label=io.kubernetes.docker.type --format '${DOCKER_FORMAT}' > "$tmp/ps"; then
  sec docker up
  cat "$tmp/ps"
  sec docker-pids
  # Only running sandboxes have a process (and a netns to tear down).
  ids=$(awk -F'\\t' '$2 == "running" && $3 == "podsandbox" {print $1}' "$tmp/ps")
  [ -n "$ids" ] && timeout 60 docker inspect --format '{{.Id}}\t{{.State.Pid}}' $ids
elif command -v docker >/dev/null 2>&1; then
  sec docker down
fi
# crictl's own deadline (2 s a call) runs out on a loaded node; a runtime that did not answer makes the audit unverifiable.
if command -v crictl >/dev/null 2>&1 && ! systemctl show -p LoadState cri-docker 2>/dev/null | grep -q '=loaded' && timeout 60 crictl --timeout 30s pods -o json > "$tmp/pods" &&
  timeout 60 crictl --timeout 30s ps -a -o json > "$tmp/containers"; then
  sec crictl-pods
  cat "$tmp/pods"
  sec crictl-containers
  cat "$tmp/containers"
fi
} > "$tmp/runtime" &
wait
cat "$tmp/ipam" "$tmp/cache" "$tmp/runtime"
sec netns
# Each pin with its age and how many processes live in it: a sandbox being set up has a young pin and no process yet.
# One pass over /proc names each process's net namespace ("net:[inode]"); a pin's inode is its namespace's.
{ find /proc/[0-9]*/ns/net -maxdepth 0 -printf 'p\\t%l\\n' 2>/dev/null; find ${STATE_DIRS.netns} -mindepth 1 -maxdepth 1 -printf 'n\\t%f\\t%i\\t%T@\\n' 2>/dev/null; } \\
  | awk -F'\\t' -v now="$now" '$1 == "p" { users[$2]++; next } { printf "%s\\t%d\\t%d\\n", $2, now - int($4), users["net:[" $3 "]"] }'
sec links
ip -o link show type veth 2>/dev/null
# The IPv4 main table (Calico's audit: a blackhole of a block whose address another node borrowed); "ok" last, so
# a table that could not be read is told from an empty one.
sec routes
ip -4 -o route show table main 2>/dev/null && echo ok
sec backups
ls -1 ${STATE_DIRS.backups} 2>/dev/null
sec end
}
gather | ${frameScript(marker)}
`;
}
