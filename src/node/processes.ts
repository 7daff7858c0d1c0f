/**
 * Shell: the PIDs of processes named NAME in the node's own PID namespace. pidof also sees the processes of containers
 * the node hosts (the kubelets and containerds of kind nodes on a CI runner), which are not the node's daemons.
 */
export const ownPidsScript = (name: string) =>
  `for p in $(pidof ${name} 2>/dev/null); do [ /proc/$p/ns/pid -ef /proc/$$/ns/pid ] && echo "$p"; done`;
