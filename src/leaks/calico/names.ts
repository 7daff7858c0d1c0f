// Where Calico keeps its IPAM in the Kubernetes datastore, and how it names a block's object.
export const CALICO_GROUP = '/apis/crd.projectcalico.org/v1';

/** Calico's name of a block's object: its CIDR with '.', ':' and '/' as '-' (libcalico-go names.CIDRToName). */
export const blockObjectName = (cidr: string) => cidr.replace(/[.:/]/g, '-');

/** Calico's name of a handle's object: its handle ID in lower case (the API's names are). */
export const handleObjectName = (handleId: string) => handleId.toLowerCase();
