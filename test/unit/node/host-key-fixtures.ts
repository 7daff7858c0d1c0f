// Real public keys from ssh-keygen -t ed25519 / -t ecdsa / -t rsa / -t dsa (key type and base64, as known_hosts holds them);
// the hashed host fields are ssh-keygen -H's output for node-7.prod and [10.1.2.3]:2200 (ssh-keygen -F finds them).
export const ED_A = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDa4pux9AEYD4hmUll1XfMSyMtfTCaHZIsyyBGPdCrlD';
export const ED_B = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAII9ycze9BLsZBfkQ3zmVAlAfkRbxDt4UBnf4hnSfMLNO';
export const ED_CA = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMMr4pz0KfRt+S+ABIpKkosWXANxyCC0kuwes2cuJcmW';
export const ECDSA =
  'ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBFmqYtBpD9192MQcxghMWovLd5wxFsrLrwIeqfHXK2isFFjTUii/RklLdVmhZeut2Y+0xDCh+25jdag5MMasa80=';
export const RSA =
  'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQDUd2BG5fxomB03bQPQvLGnkLSnkj/BuxqPwU8Q1F5ui8MXOWao+M/wZM/peZjgYDu6totNLPTv7HAZvwBMFo/gW7HCDkYJRMqLjFsyCL4l0PYu83vKAO9hZCzJ6U+B25m7bGaV8OdjmZQroe95J6FTz6oVX1uf81aXlVR9w6oGejx73QB8DhAt1SuqsOSeIIT5Sv1+cyPKv0lSnvEPyVxrchIIOVI3dowfUgSki095MEVHVtpxM4pyN+7tMts66rBTXpW8dhN36sQvS2c9etZ3MKIwefSmmmwnCGY31iitGMGxw7XGilruyGvYx43q7Wwo9KyLldTu/P7Y4GCFGzF/';
export const DSA =
  'ssh-dss AAAAB3NzaC1kc3MAAACBAOU8bj/ZozPdg5fBxbnZWxjkSO/jgEWX4XqdwzBdUGweN1c78Ayw9txDSjucMcxm/IJH1x2YZHlBj7Sz6FzxsGHpvAYw6BVjf49zmdk2RcJdtKXWXLbPA2CYH6Rf4iyfxcoec3BybA5Tbd/a/+6dtQVtgPFVGEr7wSM4wcrqcBLHAAAAFQC00Crd0H17OGhVPBDpGsomzU2ezQAAAIEAjkbH66FwK7EGul2OOoxA3QZRDqWMF9eXoqdVhFJEH5QBkiW3hvEMoFgLM8cny3CcW1K7XwxiR6S0QYGMNl7v7RZ6wSAjGrrgWNemlchjf17Jn3F3b5QwDhp4eYppMXwFQ2ThgRMrh7R8cekgFVebsKvkuhs30qHOtSKFFUuSjcwAAACARDkrX/IrXSnadhKfgaPQMAshUaf0HTyZazfKRtgPMG9mfaoilMLRcMZH+skOwbGlRvTX9KFDmnMeLZjH67eDAzMyDezCW+U2PiJeGHGUnTedBaxbDfr5Yvq9X+Z+lpzQO1+p3ks8tAllPSZLrqH8FEdDm4W7vud0wtj8kTpKo7A=';
export const HASHED_NODE7 = '|1|OvOfu0oZGJjDL+BbkRtgAo03XOk=|47K6pi1CjzVbmvhfO3c7tPsSMcU=';
export const HASHED_10_1_2_3_2200 = '|1|At9ZrCAHBq4eAPz4Hk8SMH0rVas=|IOgFs6TBwEy2QkTBnw8kG6fOljQ=';

/** The key blob a server shows during key exchange, from a "type base64" pair. */
export const blob = (typeAndKey: string): Buffer => Buffer.from(typeAndKey.split(' ')[1]!, 'base64');
