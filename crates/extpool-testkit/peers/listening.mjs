// Preload for Node MCP servers that only log their port (for example
// server-everything's streamableHttp transport, run with PORT=0): prints
// `LISTENING http://127.0.0.1:<port>/mcp` on stdout once the first TCP
// server listens, the line extpool's test helpers wait for.
//
//   PORT=0 node --import ./listening.mjs dist/index.js streamableHttp
import net from "node:net";

const listen = net.Server.prototype.listen;
let announced = false;
net.Server.prototype.listen = function (...args) {
  this.once("listening", () => {
    const address = this.address();
    if (!announced && address && typeof address === "object") {
      announced = true;
      process.stdout.write(`LISTENING http://127.0.0.1:${address.port}/mcp\n`);
    }
  });
  return listen.apply(this, args);
};
