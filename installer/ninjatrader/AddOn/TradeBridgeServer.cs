// TradeBridge NinjaScript add-on: the server side of the add-on protocol
// (docs/ninjatrader-protocol.md) over loopback TCP, without anything of
// NinjaTrader. It accepts one agent at a time, runs the handshake, numbers
// events per session, answers pings and sends its own, and hands requests to
// an ITradeBridgeHandler, which answers each through its TradeBridgeCall.
//
// Threads: one accepting connections, and per connection one reading and one
// writing. Every line a connection sends goes through its writer queue, so
// lines are never interleaved and nothing that publishes an event or a reply
// waits for the network. Close() stops them all and waits for them, boundedly.
//
// This file uses only the .NET base library: the self-test compiles it
// outside NinjaTrader.

using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Net;
using System.Net.Sockets;
using System.Text;
using System.Threading;

namespace NinjaTrader.NinjaScript.AddOns
{
	/// <summary>What the server asks of the platform side.</summary>
	public interface ITradeBridgeHandler
	{
		/// <summary>NinjaTrader's version, sent in welcome.</summary>
		string PlatformVersion { get; }

		/// <summary>
		/// Runs a request. Called on a connection's reading thread: it must not
		/// block; it answers through call.Reply or call.Fail exactly once, from
		/// any thread.
		/// </summary>
		void Handle(TradeBridgeCall call);

		/// <summary>An agent finished the handshake.</summary>
		void AgentConnected();

		/// <summary>The agent's connection ended (its subscriptions end with it).</summary>
		void AgentDisconnected();
	}

	/// <summary>One request of the agent, answered once.</summary>
	public sealed class TradeBridgeCall
	{
		private readonly TradeBridgeConnection conn;
		private int answered;

		internal TradeBridgeCall(TradeBridgeConnection conn, ulong id, string method, TradeBridgeParams prms, long timeoutMs)
		{
			this.conn = conn;
			Id = id;
			Method = method;
			Params = prms;
			TimeoutMs = timeoutMs;
			ReceivedUtc = DateTime.UtcNow;
		}

		public ulong Id { get; private set; }
		public string Method { get; private set; }
		public TradeBridgeParams Params { get; private set; }
		/// <summary>How long the agent waits, in milliseconds; 0 when it did not say.</summary>
		public long TimeoutMs { get; private set; }
		public DateTime ReceivedUtc { get; private set; }

		public bool Answered { get { return Volatile.Read(ref answered) != 0; } }

		/// <summary>Answers with a result that writeResult writes as one JSON value.</summary>
		public void Reply(Action<TradeBridgeJsonWriter> writeResult)
		{
			if (Interlocked.Exchange(ref answered, 1) != 0)
				return;
			string line;
			try
			{
				TradeBridgeJsonWriter w = new TradeBridgeJsonWriter();
				w.BeginObject().Prop("type", TradeBridgeProtocol.TypeReply).Prop("id", Id).Key("result");
				writeResult(w);
				w.EndObject();
				line = w.ToString();
			}
			catch (TradeBridgeError e)
			{
				line = ErrorLine(e);
			}
			catch (Exception e)
			{
				conn.Server.Log("reply of " + Method + " failed: " + e.GetType().Name);
				line = ErrorLine(TradeBridgeError.Internal("the add-on could not write the result"));
			}
			if (Encoding.UTF8.GetByteCount(line) > TradeBridgeProtocol.MaxLine)
				line = ErrorLine(TradeBridgeError.Internal("the result is larger than a line may be"));
			conn.Enqueue(line);
		}

		public void Fail(TradeBridgeError error)
		{
			if (Interlocked.Exchange(ref answered, 1) != 0)
				return;
			conn.Enqueue(ErrorLine(error));
		}

		private string ErrorLine(TradeBridgeError e)
		{
			TradeBridgeJsonWriter w = new TradeBridgeJsonWriter();
			w.BeginObject().Prop("type", TradeBridgeProtocol.TypeReply).Prop("id", Id).Key("error");
			e.WriteTo(w);
			w.EndObject();
			return w.ToString();
		}
	}

	/// <summary>Options of the server. Zero values take the protocol's defaults.</summary>
	public sealed class TradeBridgeServerOptions
	{
		public string Secret;
		public ITradeBridgeHandler Handler;
		/// <summary>Receives one line per notable happening; never secrets.</summary>
		public Action<string> Log;
		/// <summary>0 for an ephemeral port.</summary>
		public int Port;
		public TimeSpan HelloTimeout;
		public TimeSpan PingAfter;
		public TimeSpan DeadAfter;
		/// <summary>How many characters may wait in a connection's writer queue before it is closed.</summary>
		public long MaxQueuedChars;

		public void Validate()
		{
			if (string.IsNullOrEmpty(Secret))
				throw new ArgumentException("TradeBridgeServerOptions: a secret is required");
			if (Handler == null)
				throw new ArgumentException("TradeBridgeServerOptions: a handler is required");
			if (Port < 0 || Port > 65535)
				throw new ArgumentException("TradeBridgeServerOptions: port out of range");
			if (HelloTimeout <= TimeSpan.Zero) HelloTimeout = TradeBridgeProtocol.HelloTimeout;
			if (PingAfter <= TimeSpan.Zero) PingAfter = TradeBridgeProtocol.PingAfter;
			if (DeadAfter <= TimeSpan.Zero) DeadAfter = TradeBridgeProtocol.DeadAfter;
			if (MaxQueuedChars <= 0) MaxQueuedChars = 64L << 20;
			if (Log == null) Log = delegate { };
		}
	}

	/// <summary>The add-on's TCP server: one listener on 127.0.0.1, one agent at a time.</summary>
	public sealed class TradeBridgeServer
	{
		private static readonly TimeSpan JoinTimeout = TimeSpan.FromSeconds(2);

		private readonly TradeBridgeServerOptions opts;
		private readonly object gate = new object();
		private readonly object seqGate = new object();
		private readonly List<TradeBridgeConnection> conns = new List<TradeBridgeConnection>();
		private TcpListener listener;
		private Thread acceptThread;
		private TradeBridgeConnection agent;
		private ulong seq;
		private bool closed;

		public TradeBridgeServer(TradeBridgeServerOptions opts)
		{
			opts.Validate();
			this.opts = opts;
			SessionId = TradeBridgeSecrets.NewSessionId();
		}

		/// <summary>This run's session id: events are numbered within it.</summary>
		public string SessionId { get; private set; }

		/// <summary>The port listened on, once Start returned.</summary>
		public int Port { get; private set; }

		internal TradeBridgeServerOptions Options { get { return opts; } }

		/// <summary>True while an agent is connected.</summary>
		public bool HasAgent { get { lock (gate) return agent != null; } }

		internal void Log(string s)
		{
			try { opts.Log(s); }
			catch { }
		}

		/// <summary>Listens on the loopback interface and starts accepting.</summary>
		public void Start()
		{
			lock (gate)
			{
				if (closed)
					throw new ObjectDisposedException("TradeBridgeServer");
				if (listener != null)
					return;
				listener = new TcpListener(IPAddress.Loopback, opts.Port);
				listener.Start();
				Port = ((IPEndPoint)listener.LocalEndpoint).Port;
				acceptThread = new Thread(AcceptLoop) { IsBackground = true, Name = "TradeBridge accept" };
				acceptThread.Start();
			}
		}

		private void AcceptLoop()
		{
			while (true)
			{
				TcpClient c;
				try
				{
					c = listener.AcceptTcpClient();
				}
				catch (Exception)
				{
					lock (gate)
						if (closed)
							return;
					// A failed accept (the peer went away) is not the end of the listener.
					Thread.Sleep(50);
					continue;
				}
				TradeBridgeConnection conn;
				lock (gate)
				{
					if (closed)
					{
						try { c.Close(); } catch { }
						return;
					}
					conn = new TradeBridgeConnection(this, c);
					conns.Add(conn);
				}
				conn.Start();
			}
		}

		/// <summary>The last event number given in this session.</summary>
		public ulong CurrentSeq
		{
			get { lock (seqGate) return seq; }
		}

		/// <summary>
		/// Numbers an event and queues it to the agent, if one is connected.
		/// writeData writes the event's data as one JSON value. Events are
		/// numbered and queued in the order of the calls.
		/// </summary>
		public void Publish(string kind, Action<TradeBridgeJsonWriter> writeData)
		{
			StringBuilder data = new StringBuilder();
			writeData(new TradeBridgeJsonWriter(data));
			string d = data.ToString();
			lock (seqGate)
			{
				seq++;
				TradeBridgeJsonWriter w = new TradeBridgeJsonWriter();
				w.BeginObject().Prop("type", TradeBridgeProtocol.TypeEvent).Prop("seq", seq).Prop("kind", kind).Key("data").Raw(d).EndObject();
				string line = w.ToString();
				if (Encoding.UTF8.GetByteCount(line) > TradeBridgeProtocol.MaxLine)
				{
					Log("an event of kind " + kind + " was larger than a line may be and was not sent");
					return;
				}
				TradeBridgeConnection a;
				lock (gate)
					a = agent;
				if (a != null)
					a.Enqueue(line);
			}
		}

		// Handshake: makes conn the agent unless another is connected.
		internal bool TryBecomeAgent(TradeBridgeConnection conn)
		{
			lock (gate)
			{
				if (closed || (agent != null && agent != conn))
					return false;
				agent = conn;
				return true;
			}
		}

		internal void Ended(TradeBridgeConnection conn)
		{
			bool wasAgent;
			lock (gate)
			{
				conns.Remove(conn);
				wasAgent = agent == conn;
				if (wasAgent)
					agent = null;
			}
			if (wasAgent)
			{
				Log("agent disconnected");
				try { opts.Handler.AgentDisconnected(); }
				catch (Exception e) { Log("AgentDisconnected failed: " + e.GetType().Name); }
			}
		}

		/// <summary>
		/// Says bye with the reason to a connected agent, closes every
		/// connection and the listener, and waits for their threads
		/// (boundedly). Safe to call more than once.
		/// </summary>
		public void Close(string byeReason)
		{
			TradeBridgeConnection[] all;
			TradeBridgeConnection a;
			Thread accept;
			lock (gate)
			{
				if (closed)
					return;
				closed = true;
				all = conns.ToArray();
				a = agent;
				accept = acceptThread;
				try { if (listener != null) listener.Stop(); } catch { }
			}
			if (a != null && !string.IsNullOrEmpty(byeReason))
			{
				TradeBridgeJsonWriter w = new TradeBridgeJsonWriter();
				w.BeginObject().Prop("type", TradeBridgeProtocol.TypeBye).Prop("reason", byeReason).EndObject();
				a.EnqueueLastAndFlush(w.ToString(), JoinTimeout);
			}
			foreach (TradeBridgeConnection c in all)
				c.Close();
			foreach (TradeBridgeConnection c in all)
				c.Join(JoinTimeout);
			if (accept != null && accept != Thread.CurrentThread)
				accept.Join(JoinTimeout);
		}
	}

	/// <summary>One TCP connection: the handshake, then requests, pings and the writer queue.</summary>
	internal sealed class TradeBridgeConnection
	{
		private static readonly UTF8Encoding Utf8 = new UTF8Encoding(false);

		private readonly TradeBridgeServer server;
		private readonly TcpClient client;
		private readonly NetworkStream stream;
		private readonly object qGate = new object();
		private readonly Queue<string> queue = new Queue<string>();
		private long queuedChars;
		private bool closing;       // no more lines are accepted
		private bool writerDone;
		private Thread reader, writer;
		private long pingId;

		internal TradeBridgeConnection(TradeBridgeServer server, TcpClient client)
		{
			this.server = server;
			this.client = client;
			client.NoDelay = true;
			stream = client.GetStream();
		}

		internal TradeBridgeServer Server { get { return server; } }

		internal void Start()
		{
			reader = new Thread(ReadLoop) { IsBackground = true, Name = "TradeBridge read" };
			writer = new Thread(WriteLoop) { IsBackground = true, Name = "TradeBridge write" };
			writer.Start();
			reader.Start();
		}

		/// <summary>Queues a line; a connection whose queue overflows is closed.</summary>
		internal void Enqueue(string line)
		{
			bool overflow = false;
			lock (qGate)
			{
				if (closing)
					return;
				queue.Enqueue(line);
				queuedChars += line.Length;
				if (queuedChars > server.Options.MaxQueuedChars)
					overflow = true;
				Monitor.PulseAll(qGate);
			}
			if (overflow)
			{
				server.Log("the agent reads too slowly; its connection is closed");
				Close();
			}
		}

		/// <summary>Queues a last line, stops accepting more and waits until it is written.</summary>
		internal void EnqueueLastAndFlush(string line, TimeSpan wait)
		{
			DateTime until = DateTime.UtcNow + wait;
			lock (qGate)
			{
				if (closing)
					return;
				queue.Enqueue(line);
				closing = true;
				Monitor.PulseAll(qGate);
				while (!writerDone && (queue.Count > 0))
				{
					TimeSpan left = until - DateTime.UtcNow;
					if (left <= TimeSpan.Zero)
						break;
					Monitor.Wait(qGate, left);
				}
			}
		}

		private void WriteLoop()
		{
			DateTime lastWrite = DateTime.UtcNow;
			try
			{
				while (true)
				{
					string line = null;
					bool ping = false;
					lock (qGate)
					{
						while (queue.Count == 0 && !closing)
						{
							TimeSpan idle = server.Options.PingAfter - (DateTime.UtcNow - lastWrite);
							if (idle <= TimeSpan.Zero)
							{
								ping = true;
								break;
							}
							Monitor.Wait(qGate, idle);
						}
						if (!ping)
						{
							if (queue.Count == 0)
								return; // closing and drained
							line = queue.Dequeue();
							queuedChars -= line.Length;
						}
					}
					if (ping)
					{
						if (!Authenticated)
						{
							lastWrite = DateTime.UtcNow;
							continue;
						}
						long id = Interlocked.Increment(ref pingId);
						line = "{\"type\":\"ping\",\"id\":" + id.ToString(CultureInfo.InvariantCulture) + "}";
					}
					byte[] b = Utf8.GetBytes(line + "\n");
					stream.Write(b, 0, b.Length);
					lastWrite = DateTime.UtcNow;
					lock (qGate)
						Monitor.PulseAll(qGate);
				}
			}
			catch (Exception)
			{
				// The peer went away; the reader notices too.
			}
			finally
			{
				lock (qGate)
				{
					writerDone = true;
					closing = true;
					queue.Clear();
					queuedChars = 0;
					Monitor.PulseAll(qGate);
				}
				Close();
			}
		}

		private volatile bool authenticated;
		private bool Authenticated { get { return authenticated; } }

		private void ReadLoop()
		{
			try
			{
				TradeBridgeLineReader lines = new TradeBridgeLineReader(stream, TradeBridgeProtocol.MaxLine);
				client.ReceiveTimeout = (int)server.Options.HelloTimeout.TotalMilliseconds;
				if (!Handshake(lines))
					return;
				client.ReceiveTimeout = (int)server.Options.DeadAfter.TotalMilliseconds;
				while (true)
				{
					string line;
					try
					{
						line = lines.ReadLine();
					}
					catch (DecoderFallbackException)
					{
						continue; // a line that is not UTF-8 is skipped like any malformed line
					}
					if (line == null)
						return;
					HandleLine(line);
				}
			}
			catch (TradeBridgeLineTooLongException)
			{
				server.Log("the agent sent a line over the limit; its connection is closed");
			}
			catch (Exception)
			{
				// Closed, timed out (nothing received within the dead time) or reset.
			}
			finally
			{
				Close();
				server.Ended(this);
			}
		}

		// Reads the hello and answers welcome or refused. True when the connection is the agent's.
		private bool Handshake(TradeBridgeLineReader lines)
		{
			string line;
			try
			{
				line = lines.ReadLine();
			}
			catch (IOException)
			{
				return false; // silent past the hello timeout, or gone
			}
			catch (DecoderFallbackException)
			{
				line = "";
			}
			if (line == null)
				return false;
			Dictionary<string, object> msg = ParseObject(line);
			if (msg == null || !"hello".Equals(Str(msg, "type")))
			{
				Refuse(TradeBridgeProtocol.RefusedBadHello, "the first line was not a hello");
				return false;
			}
			if (!TradeBridgeSecrets.ConstantTimeEquals(Str(msg, "secret"), server.Options.Secret))
			{
				Refuse(TradeBridgeProtocol.RefusedBadSecret, "the secret does not match the add-on's");
				return false;
			}
			long agentVersion = 0;
			object v;
			TradeBridgeJsonNumber n;
			if (msg.TryGetValue("protocolVersion", out v) && (n = v as TradeBridgeJsonNumber) != null)
				n.TryGetInt64(out agentVersion);
			if (agentVersion < 1)
			{
				Refuse(TradeBridgeProtocol.RefusedVersionUnsupported, "the add-on speaks protocol version 1");
				return false;
			}
			if (!server.TryBecomeAgent(this))
			{
				Refuse(TradeBridgeProtocol.RefusedBusy, "another agent is connected");
				return false;
			}
			int version = (int)Math.Min(agentVersion, TradeBridgeProtocol.Version);
			TradeBridgeJsonWriter w = new TradeBridgeJsonWriter();
			w.BeginObject()
				.Prop("type", TradeBridgeProtocol.TypeWelcome)
				.Prop("protocolVersion", version)
				.Prop("sessionId", server.SessionId)
				.Prop("addonVersion", TradeBridgeProtocol.AddonVersion)
				.Prop("platformVersion", SafePlatformVersion())
				.EndObject();
			Enqueue(w.ToString());
			authenticated = true;
			server.Log("agent connected");
			try { server.Options.Handler.AgentConnected(); }
			catch (Exception e) { server.Log("AgentConnected failed: " + e.GetType().Name); }
			return true;
		}

		private string SafePlatformVersion()
		{
			try { return server.Options.Handler.PlatformVersion ?? ""; }
			catch { return ""; }
		}

		private void Refuse(string code, string message)
		{
			TradeBridgeJsonWriter w = new TradeBridgeJsonWriter();
			w.BeginObject().Prop("type", TradeBridgeProtocol.TypeRefused).Prop("code", code).Prop("message", message).EndObject();
			EnqueueLastAndFlush(w.ToString(), TimeSpan.FromSeconds(2));
		}

		private void HandleLine(string line)
		{
			if (line.Trim().Length == 0)
				return;
			Dictionary<string, object> msg = ParseObject(line);
			if (msg == null)
				return; // malformed lines are skipped
			string type = Str(msg, "type");
			switch (type)
			{
				case TradeBridgeProtocol.TypePing:
					{
						object id;
						msg.TryGetValue("id", out id);
						TradeBridgeJsonWriter w = new TradeBridgeJsonWriter();
						w.BeginObject().Prop("type", TradeBridgeProtocol.TypePong).Key("id").Value(id is TradeBridgeJsonNumber ? id : null).EndObject();
						Enqueue(w.ToString());
						return;
					}
				case TradeBridgeProtocol.TypePong:
					return; // receiving anything already proved the agent alive
				case TradeBridgeProtocol.TypeRequest:
					HandleRequest(msg);
					return;
				default:
					return; // unknown types are ignored after the handshake
			}
		}

		private void HandleRequest(Dictionary<string, object> msg)
		{
			object v;
			ulong id;
			TradeBridgeJsonNumber n;
			if (!msg.TryGetValue("id", out v) || (n = v as TradeBridgeJsonNumber) == null || !n.TryGetUInt64(out id))
				return; // a request without an id cannot be answered
			string method = Str(msg, "method");
			long timeoutMs = 0;
			if (msg.TryGetValue("timeoutMs", out v) && (n = v as TradeBridgeJsonNumber) != null)
				n.TryGetInt64(out timeoutMs);
			Dictionary<string, object> prms = null;
			bool badParams = msg.TryGetValue("params", out v) && v != null && (prms = v as Dictionary<string, object>) == null;
			TradeBridgeCall call = new TradeBridgeCall(this, id, method ?? "", new TradeBridgeParams(prms), timeoutMs);
			if (badParams)
			{
				call.Fail(TradeBridgeError.BadRequest("params must be an object"));
				return;
			}
			if (string.IsNullOrEmpty(method))
			{
				call.Fail(new TradeBridgeError(TradeBridgeProtocol.CodeUnknownMethod, "the request names no method"));
				return;
			}
			try
			{
				server.Options.Handler.Handle(call);
			}
			catch (TradeBridgeError e)
			{
				call.Fail(e);
			}
			catch (Exception e)
			{
				server.Log("request " + method + " failed: " + e.GetType().Name);
				call.Fail(TradeBridgeError.Internal("the add-on failed to run the request"));
			}
		}

		private static Dictionary<string, object> ParseObject(string line)
		{
			try
			{
				return TradeBridgeJsonReader.Parse(line) as Dictionary<string, object>;
			}
			catch (TradeBridgeJsonException)
			{
				return null;
			}
		}

		private static string Str(Dictionary<string, object> m, string key)
		{
			object v;
			return m.TryGetValue(key, out v) ? v as string : null;
		}

		internal void Close()
		{
			lock (qGate)
			{
				closing = true;
				Monitor.PulseAll(qGate);
			}
			try { client.Close(); } catch { }
		}

		internal void Join(TimeSpan t)
		{
			if (reader != null && reader != Thread.CurrentThread) reader.Join(t);
			if (writer != null && writer != Thread.CurrentThread) writer.Join(t);
		}
	}
}
