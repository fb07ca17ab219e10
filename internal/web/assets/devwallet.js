// A local test wallet for `make run`: an Ed25519 key made with WebCrypto
// and kept in this browser's localStorage, exposed as window.solana with
// the calls the console uses (connect, publicKey, signMessage). It signs
// the Sign-In-With-Solana message only when asked; it never holds funds.
const STORE = "attestd.testWallet";
const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

function base58(bytes) {
  let n = 0n;
  for (const b of bytes) n = n * 256n + BigInt(b);
  let out = "";
  while (n > 0n) { out = ALPHABET[Number(n % 58n)] + out; n /= 58n; }
  for (const b of bytes) { if (b !== 0) break; out = "1" + out; }
  return out;
}

async function loadKey() {
  const saved = localStorage.getItem(STORE);
  if (saved) {
    const jwk = JSON.parse(saved);
    const priv = await crypto.subtle.importKey("jwk", jwk, { name: "Ed25519" }, false, ["sign"]);
    const pub = Uint8Array.from(atob(jwk.x.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
    return { priv, pub };
  }
  const pair = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]);
  const jwk = await crypto.subtle.exportKey("jwk", pair.privateKey);
  localStorage.setItem(STORE, JSON.stringify(jwk));
  const pub = new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey));
  return { priv: pair.privateKey, pub };
}

// installTestWallet defines window.solana and returns its address.
export async function installTestWallet() {
  const { priv, pub } = await loadKey();
  const address = base58(pub);
  const publicKey = { toBase58: () => address, toString: () => address };
  window.solana = {
    isAttestdTestWallet: true,
    publicKey: null,
    async connect() { this.publicKey = publicKey; return { publicKey }; },
    async signMessage(bytes) {
      const sig = new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, priv, bytes));
      return { signature: sig, publicKey };
    },
  };
  return address;
}
