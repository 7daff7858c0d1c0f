/** Calico's name of a block's object: its CIDR with '.', ':' and '/' as '-' (libcalico-go names.CIDRToName). */
export const blockObjectName = (cidr: string) => cidr.replace(/[.:/]/g, '-');
