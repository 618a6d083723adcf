// Self-test of the TradeBridge add-on's parts that do not need NinjaTrader:
// the JSON reader and writer, the order-name encoding, line framing,
// secrets, instrument names, times, the discovery file, the golden lines of
// the protocol document's example, and the server end to end over loopback
// TCP with a fake platform. `make addon` compiles it with the add-on's pure
// files and runs it under Mono:
//
//   mono selftest.exe docs/ninjatrader-protocol.md
//
// It prints one line per failed check and ends with "N passed, M failed";
// its exit code is 1 when a check failed.

using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Net.Sockets;
using System.Text;
using System.Threading;
using NinjaTrader.NinjaScript.AddOns;

internal static class TradeBridgeSelfTest
{
	private static int passed, failed;
	private static readonly TimeSpan WaitTimeout = TimeSpan.FromSeconds(5);

	private static void Check(bool ok, string what)
	{
		if (ok)
			passed++;
		else
		{
			failed++;
			Console.WriteLine("FAIL: " + what);
		}
	}

	private static void Equal(object want, object got, string what)
	{
		bool ok = want == null ? got == null : want.Equals(got);
		Check(ok, what + ": want " + Show(want) + ", got " + Show(got));
	}

	private static string Show(object o)
	{
		return o == null ? "null" : "<" + o + ">";
	}

	private static void Throws<T>(Action a, string what) where T : Exception
	{
		try
		{
			a();
			Check(false, what + ": no " + typeof(T).Name);
		}
		catch (T)
		{
			Check(true, what);
		}
		catch (Exception e)
		{
			Check(false, what + ": " + e.GetType().Name + " instead of " + typeof(T).Name);
		}
	}

	private static int Main(string[] args)
	{
		// Numbers must not depend on the machine's culture.
		Thread.CurrentThread.CurrentCulture = new CultureInfo("de-DE");
		Run("json", Json);
		Run("order names", OrderNames);
		Run("lines", Lines);
		Run("secrets", Secrets);
		Run("instrument names", InstrumentNames);
		Run("times", Times);
		Run("params", Params);
		Run("discovery", Discovery);
		if (args.Length > 0)
			Run("golden lines", delegate { Golden(args[0]); });
		Run("server", Server);
		Run("server timing", ServerTiming);
		Console.WriteLine(passed + " passed, " + failed + " failed");
		return failed == 0 ? 0 : 1;
	}

	private static void Run(string name, Action test)
	{
		try
		{
			test();
		}
		catch (Exception e)
		{
			Check(false, name + ": " + e);
		}
	}

	// ---- JSON ----

	private static string RoundTrip(string json)
	{
		return new TradeBridgeJsonWriter().Value(TradeBridgeJsonReader.Parse(json)).ToString();
	}

	private static void Json()
	{
		string[] same =
		{
			"{}", "[]", "null", "true", "false", "0", "-0", "1.5", "-12.25e-3", "1E+30", "18446744073709551615",
			"\"\"", "\"a\\\"b\\\\c\"", "{\"a\":[1,2,{\"b\":null}],\"c\":\"x\"}", "[[[[]]]]",
		};
		foreach (string s in same)
			Equal(s, RoundTrip(s), "round trip of " + s);

		Equal("\"\\n\\t\\r\\b\\f\\u0001\"", RoundTrip("\"\\n\\t\\r\\b\\f\\u0001\""), "control escapes");
		Equal("\"/\"", RoundTrip("\"\\/\""), "escaped slash");
		Equal("\u00e9", (string)TradeBridgeJsonReader.Parse("\"\\u00e9\""), "\\u escape");
		Equal("\ud83d\ude00", (string)TradeBridgeJsonReader.Parse("\"\\ud83d\\ude00\""), "surrogate pair escape");
		Equal("\ud83d\ude00", (string)TradeBridgeJsonReader.Parse("\"\ud83d\ude00\""), "raw surrogate pair");
		Equal("\"\ud83d\ude00\"", new TradeBridgeJsonWriter().String("\ud83d\ude00").ToString(), "pair written as is");
		Equal("\"\ufffd\"", new TradeBridgeJsonWriter().String("\ud83d").ToString(), "lone surrogate written as U+FFFD");
		Equal("\"\\u2028\"", new TradeBridgeJsonWriter().String("\u2028").ToString(), "line separator escaped");

		string[] bad =
		{
			"", " ", "{", "}", "[1,]", "{\"a\":1,}", "{a:1}", "{\"a\" 1}", "01", "1.", ".5", "-", "+1", "1e", "NaN",
			"Infinity", "tru", "nul", "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"",
			"\"\u0001\"", "\"\ud800\"", "{\"a\":1,\"a\":2}", "1 2", "[1] x", "1e999", "// c\n1",
		};
		foreach (string s in bad)
		{
			string label = s.Replace("\n", "\\n");
			Throws<TradeBridgeJsonException>(delegate { TradeBridgeJsonReader.Parse(s); }, "refuses " + label);
		}

		StringBuilder deep = new StringBuilder();
		for (int i = 0; i < 64; i++) deep.Append('[');
		for (int i = 0; i < 64; i++) deep.Append(']');
		Check(TradeBridgeJsonReader.Parse(deep.ToString()) != null, "depth 64 accepted");
		Throws<TradeBridgeJsonException>(delegate { TradeBridgeJsonReader.Parse("[" + deep + "]"); }, "depth 65 refused");

		try
		{
			TradeBridgeJsonReader.Parse("{\"secret\":\"s3cr3t\",}");
		}
		catch (TradeBridgeJsonException e)
		{
			Check(e.Message.IndexOf("s3cr3t", StringComparison.Ordinal) < 0, "errors never echo the text");
		}

		TradeBridgeJsonWriter w = new TradeBridgeJsonWriter();
		w.BeginObject().Prop("a", 1.5).Prop("b", 6012.25).Prop("c", 1e-7).Prop("d", double.NaN).Prop("e", -3L)
			.Prop("f", ulong.MaxValue).Prop("g", true).PropIf("h", "").PropIf("i", "x").Key("j").BeginArray().Number(1L).Null().EndArray()
			.EndObject();
		Equal("{\"a\":1.5,\"b\":6012.25,\"c\":1E-07,\"d\":null,\"e\":-3,\"f\":18446744073709551615,\"g\":true,\"i\":\"x\",\"j\":[1,null]}",
			w.ToString(), "writer, invariant culture");
		Check(TradeBridgeJsonReader.Parse(w.ToString()) != null, "writer output parses");

		TradeBridgeJsonNumber n = (TradeBridgeJsonNumber)TradeBridgeJsonReader.Parse("18446744073709551615");
		ulong u;
		Check(n.TryGetUInt64(out u) && u == ulong.MaxValue, "uint64 without a double");
		long l;
		Check(((TradeBridgeJsonNumber)TradeBridgeJsonReader.Parse("2.0")).TryGetInt64(out l) && l == 2, "2.0 is whole");
		Check(!((TradeBridgeJsonNumber)TradeBridgeJsonReader.Parse("2.5")).TryGetInt64(out l), "2.5 is not whole");
		Check(!((TradeBridgeJsonNumber)TradeBridgeJsonReader.Parse("-1")).TryGetUInt64(out u), "-1 is not unsigned");
	}

	// ---- order names ----

	private static void OrderNames()
	{
		Equal("sig|a1b2c3", TradeBridgeOrderName.Make("sig", "a1b2c3", ""), "name|id");
		Equal("sig|a1b2c3|tag", TradeBridgeOrderName.Make("sig", "a1b2c3", "tag"), "name|id|tag");
		Equal("|a1", TradeBridgeOrderName.Make("", "a1", null), "empty name");

		object[][] cases =
		{
			// input, ok, name, id, tag
			new object[] { "sig|a1b2c3", true, "sig", "a1b2c3", "" },
			new object[] { "sig|a1b2c3|tag", true, "sig", "a1b2c3", "tag" },
			new object[] { "|A.b_c:d-9", true, "", "A.b_c:d-9", "" },
			new object[] { "sig|a1|", false, null, null, null },
			new object[] { "Entry", false, null, null, null },
			new object[] { "Stop1", false, null, null, null },
			new object[] { "a|b|c|d", false, null, null, null },
			new object[] { "a||c", false, null, null, null },
			new object[] { "a|b c", false, null, null, null },
			new object[] { "a|" + new string('x', 65), false, null, null, null },
			new object[] { "a|" + new string('x', 64), true, "a", new string('x', 64), "" },
		};
		foreach (object[] c in cases)
		{
			string name, id, tag;
			bool ok = TradeBridgeOrderName.TryParse((string)c[0], out name, out id, out tag);
			Equal(c[1], ok, "TryParse(" + c[0] + ") ok");
			if (ok)
			{
				Equal(c[2], name, "name of " + c[0]);
				Equal(c[3], id, "id of " + c[0]);
				Equal(c[4], tag, "tag of " + c[0]);
				Equal((string)c[0], TradeBridgeOrderName.Make(name, id, tag), "Make inverts TryParse for " + c[0]);
			}
		}
		Check(!TradeBridgeOrderName.ValidOrderId(""), "empty id invalid");
		Check(!TradeBridgeOrderName.ValidOrderId("a/b"), "slash invalid");
		Check(TradeBridgeOrderName.ValidOrderId("copy:1.2_x-Y"), "id alphabet");
	}

	// ---- lines ----

	private static TradeBridgeLineReader Reader(string s, int max)
	{
		return new TradeBridgeLineReader(new MemoryStream(Encoding.UTF8.GetBytes(s)), max);
	}

	private static void Lines()
	{
		TradeBridgeLineReader r = Reader("a\r\nbb\n\n\u00e9\n", 16);
		Equal("a", r.ReadLine(), "CRLF line");
		Equal("bb", r.ReadLine(), "LF line");
		Equal("", r.ReadLine(), "empty line");
		Equal("\u00e9", r.ReadLine(), "UTF-8 line");
		Equal(null, r.ReadLine(), "end of stream");

		Equal("12345678", Reader("12345678\n", 8).ReadLine(), "line of exactly the limit");
		Equal("12345678", Reader("12345678\r\n", 8).ReadLine(), "limit plus CR");
		Throws<TradeBridgeLineTooLongException>(delegate { Reader("123456789\n", 8).ReadLine(); }, "line over the limit");
		Throws<EndOfStreamException>(delegate { TradeBridgeLineReader x = Reader("ab", 8); x.ReadLine(); }, "end inside a line");

		// A long line across many reads of the internal buffer.
		string big = new string('x', 200000);
		TradeBridgeLineReader rb = Reader(big + "\n" + "y\n", 300000);
		Equal(big.Length, rb.ReadLine().Length, "long line");
		Equal("y", rb.ReadLine(), "line after a long line");
		Throws<TradeBridgeLineTooLongException>(delegate { Reader(big + "\n", 100000).ReadLine(); }, "long line over the limit");

		MemoryStream bad = new MemoryStream(new byte[] { 0xff, 0xfe, (byte)'\n', (byte)'o', (byte)'k', (byte)'\n' });
		TradeBridgeLineReader rbad = new TradeBridgeLineReader(bad, 16);
		Throws<DecoderFallbackException>(delegate { rbad.ReadLine(); }, "invalid UTF-8");
		Equal("ok", rbad.ReadLine(), "line after invalid UTF-8");
	}

	// ---- secrets ----

	private static void Secrets()
	{
		string a = TradeBridgeSecrets.NewSecret(), b = TradeBridgeSecrets.NewSecret();
		Equal(43, a.Length, "secret length");
		Check(a != b, "secrets differ");
		foreach (char c in a)
			Check((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_',
				"secret alphabet");
		Check(TradeBridgeSecrets.ConstantTimeEquals(a, a), "equal secrets");
		Check(!TradeBridgeSecrets.ConstantTimeEquals(a, b), "different secrets");
		Check(!TradeBridgeSecrets.ConstantTimeEquals(a, a.Substring(0, 42)), "prefix is not equal");
		Check(!TradeBridgeSecrets.ConstantTimeEquals(a, null), "null is not equal");
		string id = TradeBridgeSecrets.NewSessionId();
		Equal(16, id.Length, "session id length");
		Equal("-_-_", TradeBridgeSecrets.Base64Url(new byte[] { 0xfb, 0xff, 0xbf }), "base64url alphabet");
	}

	// ---- instrument names ----

	private static void InstrumentNames()
	{
		object[][] cases =
		{
			new object[] { "ES 12-26", TradeBridgeInstrumentForm.Contract, "ES", 12, 26 },
			new object[] { "es 03-27", TradeBridgeInstrumentForm.Contract, "ES", 3, 27 },
			new object[] { "M2K 06-26", TradeBridgeInstrumentForm.Contract, "M2K", 6, 26 },
			new object[] { "ES", TradeBridgeInstrumentForm.Root, "ES", 0, 0 },
			new object[] { "ESZ26", TradeBridgeInstrumentForm.MonthCode, "ES", 12, 26 },
			new object[] { "ESZ6", TradeBridgeInstrumentForm.MonthCode, "ES", 12, 6 },
			new object[] { "ES 13-26", TradeBridgeInstrumentForm.Malformed, null, 0, 0 },
			new object[] { "ES 1-26", TradeBridgeInstrumentForm.Malformed, null, 0, 0 },
			new object[] { "ES  12-26", TradeBridgeInstrumentForm.Malformed, null, 0, 0 },
			new object[] { "ES/12", TradeBridgeInstrumentForm.Malformed, null, 0, 0 },
			new object[] { "", TradeBridgeInstrumentForm.Malformed, null, 0, 0 },
			new object[] { "TOOLONGX", TradeBridgeInstrumentForm.Malformed, null, 0, 0 },
			new object[] { "ABCDEFG1", TradeBridgeInstrumentForm.MonthCode, "ABCDEF", 2, 1 },
		};
		foreach (object[] c in cases)
		{
			TradeBridgeInstrumentName n = TradeBridgeInstrumentName.Parse((string)c[0]);
			Equal(c[1], n.Form, "form of '" + c[0] + "'");
			if (n.Form == TradeBridgeInstrumentForm.Malformed)
				continue;
			Equal(c[2], n.Root, "root of " + c[0]);
			Equal(c[3], n.Month, "month of " + c[0]);
			Equal(c[4], n.Year, "year of " + c[0]);
		}
		Equal("ES 12-26", TradeBridgeInstrumentName.ContractName("ES", 12, 2026), "contract name");
		Equal("CL 01-05", TradeBridgeInstrumentName.ContractName("CL", 1, 2005), "contract name, short year");
	}

	// ---- times ----

	private static void Times()
	{
		DateTime t = new DateTime(2026, 11, 25, 14, 2, 11, DateTimeKind.Utc);
		Equal("2026-11-25T14:02:11Z", TradeBridgeTime.Format(t), "RFC 3339");
		Equal("2026-11-25T14:02:11.250Z", TradeBridgeTime.Format(t.AddMilliseconds(250)), "with milliseconds");
		Equal(1795615331000L, TradeBridgeTime.Epoch(t), "epoch ms");
		DateTime p;
		Check(TradeBridgeTime.TryParse("2026-11-25T14:02:11Z", out p) && p == t, "parse Z");
		Check(TradeBridgeTime.TryParse("2026-11-25T09:02:11-05:00", out p) && p == t, "parse offset");
		Check(TradeBridgeTime.TryParse("2026-11-25T14:02:11.5Z", out p) && p == t.AddMilliseconds(500), "parse fraction");
		Check(!TradeBridgeTime.TryParse("2026-11-25T14:02:11", out p), "no zone refused");
		Check(!TradeBridgeTime.TryParse("2026-11-25", out p), "date only refused");
		Check(!TradeBridgeTime.TryParse("yesterday", out p), "words refused");
	}

	// ---- params ----

	private static void Params()
	{
		TradeBridgeParams p = new TradeBridgeParams((Dictionary<string, object>)TradeBridgeJsonReader.Parse(
			"{\"account\":\"Sim101\",\"quantity\":2,\"limitPrice\":6012.25,\"bad\":\"x\",\"instruments\":[\"ES\",\"NQ\"],\"half\":1.5}"));
		Equal("Sim101", p.RequiredString("account"), "string");
		Equal(2L, p.Int("quantity", 0), "int");
		Equal(6012.25, p.Number("limitPrice", 0), "number");
		Equal(7L, p.Int("absent", 7), "default");
		Equal(2, p.Strings("instruments").Count, "strings");
		Throws<TradeBridgeError>(delegate { p.Int("bad", 0); }, "string as int");
		Throws<TradeBridgeError>(delegate { p.Int("half", 0); }, "1.5 as int");
		Throws<TradeBridgeError>(delegate { p.RequiredString("quantity"); }, "number as string");
		Throws<TradeBridgeError>(delegate { p.RequiredString("absent"); }, "missing string");
		try
		{
			p.Int("bad", 0);
		}
		catch (TradeBridgeError e)
		{
			Equal("bad_request", e.Code, "code of a wrong type");
		}
	}

	// ---- discovery ----

	private static void Discovery()
	{
		string dir = Path.Combine(Path.GetTempPath(), "tb-selftest-" + TradeBridgeSecrets.NewSessionId());
		string path = Path.Combine(Path.Combine(dir, "sub"), TradeBridgeProtocol.DiscoveryFileName);
		try
		{
			string secret = TradeBridgeSecrets.NewSecret();
			DateTime started = new DateTime(2026, 11, 25, 14, 2, 11, DateTimeKind.Utc);
			string userDataDir = @"C:\Users\trader\OneDrive\Documents\NinjaTrader 8";
			TradeBridgeDiscovery.Write(path, 53871, secret, 4120, started, null);
			Check(!File.ReadAllText(path).Contains("userDataDir"), "no userDataDir when NinjaTrader does not say");
			TradeBridgeDiscovery.Write(path, 53872, secret, 4120, started, userDataDir + @"\"); // replaces the first
			Dictionary<string, object> d = (Dictionary<string, object>)TradeBridgeJsonReader.Parse(File.ReadAllText(path).Trim());
			Equal("1", d["version"].ToString(), "discovery version");
			Equal("53872", d["port"].ToString(), "discovery port");
			Equal(secret, d["secret"], "discovery secret");
			Equal("4120", d["pid"].ToString(), "discovery pid");
			Equal("1.0.0", d["addonVersion"], "discovery add-on version");
			Equal("2026-11-25T14:02:11Z", d["startedAt"], "discovery startedAt");
			Equal(userDataDir, d["userDataDir"], "discovery userDataDir, without a trailing separator");
			Equal(1, Directory.GetFiles(Path.GetDirectoryName(path)).Length, "no temporary file left");
			Check(!TradeBridgeDiscovery.DeleteIfOurs(path, TradeBridgeSecrets.NewSecret()), "another run's file is kept");
			Check(File.Exists(path), "file still there");
			Check(TradeBridgeDiscovery.DeleteIfOurs(path, secret), "own file deleted");
			Check(!File.Exists(path), "file gone");
		}
		finally
		{
			try { Directory.Delete(dir, true); } catch { }
		}
	}

	// ---- golden lines ----

	private static void Golden(string docPath)
	{
		string[] doc = File.ReadAllLines(docPath);
		int at = Array.FindIndex(doc, delegate (string s) { return s.StartsWith("## An example", StringComparison.Ordinal); });
		Check(at >= 0, "the document has its example");
		if (at < 0)
			return;
		int checkedLines = 0;
		bool inBlock = false;
		for (int i = at + 1; i < doc.Length; i++)
		{
			string s = doc[i];
			if (s.StartsWith("```", StringComparison.Ordinal))
			{
				if (inBlock)
					break;
				inBlock = true;
				continue;
			}
			if (!inBlock || s.Length < 3)
				continue;
			string json = s.Substring(2);
			bool fromAddon = s[0] == '\u2190';
			if (json.IndexOf('\u2026') >= 0)
			{
				// Lines shortened with an ellipsis are checked for their kind only.
				Check(json.StartsWith("{\"type\":\"", StringComparison.Ordinal), "example line has a type first: " + json);
				continue;
			}
			checkedLines++;
			Equal(json, RoundTrip(json), "example line round-trips");
			Dictionary<string, object> m = (Dictionary<string, object>)TradeBridgeJsonReader.Parse(json);
			string type = (string)m["type"];
			if (fromAddon && type == "welcome")
			{
				TradeBridgeJsonWriter w = new TradeBridgeJsonWriter();
				w.BeginObject().Prop("type", "welcome").Prop("protocolVersion", TradeBridgeProtocol.Version)
					.Prop("sessionId", (string)m["sessionId"]).Prop("addonVersion", TradeBridgeProtocol.AddonVersion)
					.Prop("platformVersion", (string)m["platformVersion"]).EndObject();
				Equal(json, w.ToString(), "the add-on writes the example's welcome");
			}
			if (fromAddon && type == "ping")
				Equal(json, "{\"type\":\"ping\",\"id\":" + m["id"] + "}", "the add-on writes the example's ping");
			if (!fromAddon && type == "request")
			{
				TradeBridgeParams p = new TradeBridgeParams(m.ContainsKey("params") ? (Dictionary<string, object>)m["params"] : null);
				if ((string)m["method"] == "submitOrder")
				{
					Equal("a1b2c3", p.RequiredString("orderId"), "example submitOrder id");
					Check(TradeBridgeOrderName.ValidOrderId(p.RequiredString("orderId")), "example id is valid");
					Equal(1L, p.Int("quantity", 0), "example quantity");
				}
			}
		}
		Check(checkedLines >= 5, "the example has complete lines (" + checkedLines + ")");
	}

	// ---- server ----

	private sealed class FakeHandler : ITradeBridgeHandler
	{
		public TradeBridgeServer Server;
		public int Connected, Disconnected;

		public string PlatformVersion { get { return "8.1.4.1"; } }

		public void AgentConnected() { Interlocked.Increment(ref Connected); }

		public void AgentDisconnected() { Interlocked.Increment(ref Disconnected); }

		public void Handle(TradeBridgeCall call)
		{
			switch (call.Method)
			{
				case "snapshot":
					ulong seq = Server.CurrentSeq;
					call.Reply(delegate (TradeBridgeJsonWriter w) { w.BeginObject().Prop("seq", seq).EndObject(); });
					break;
				case "submitOrder":
					// An event caused by a request is published before its reply, from another thread.
					string id = call.Params.RequiredString("orderId");
					ThreadPool.QueueUserWorkItem(delegate
					{
						Server.Publish("order", delegate (TradeBridgeJsonWriter w) { w.BeginObject().Prop("orderId", id).EndObject(); });
						call.Reply(delegate (TradeBridgeJsonWriter w) { w.BeginObject().Key("order").BeginObject().Prop("orderId", id).EndObject().EndObject(); });
					});
					break;
				case "boom":
					throw new InvalidOperationException("secret detail");
				default:
					call.Fail(new TradeBridgeError("unknown_method", "the add-on has no such method"));
					break;
			}
		}
	}

	private sealed class Client : IDisposable
	{
		private readonly TcpClient tcp;
		private readonly NetworkStream stream;
		private readonly TradeBridgeLineReader reader;

		public Client(int port)
		{
			tcp = new TcpClient();
			tcp.Connect("127.0.0.1", port);
			tcp.ReceiveTimeout = (int)WaitTimeout.TotalMilliseconds;
			stream = tcp.GetStream();
			reader = new TradeBridgeLineReader(stream, TradeBridgeProtocol.MaxLine);
		}

		public void Send(string line)
		{
			byte[] b = Encoding.UTF8.GetBytes(line + "\n");
			stream.Write(b, 0, b.Length);
		}

		/// <summary>The next message that is not a ping (pings are answered), or null at the end.</summary>
		public Dictionary<string, object> Next()
		{
			while (true)
			{
				string line = reader.ReadLine();
				if (line == null)
					return null;
				Dictionary<string, object> m = (Dictionary<string, object>)TradeBridgeJsonReader.Parse(line);
				if ((string)m["type"] == "ping")
				{
					Send("{\"type\":\"pong\",\"id\":" + m["id"] + "}");
					continue;
				}
				return m;
			}
		}

		public string RawLine() { return reader.ReadLine(); }

		/// <summary>True when the server closes the connection (end of stream or reset).</summary>
		public bool Ends()
		{
			try
			{
				while (true)
					if (reader.ReadLine() == null)
						return true;
			}
			catch (IOException e)
			{
				SocketException se = e.InnerException as SocketException;
				return se == null || se.SocketErrorCode != SocketError.TimedOut && se.SocketErrorCode != SocketError.WouldBlock;
			}
		}

		public void Dispose() { tcp.Close(); }
	}

	private static TradeBridgeServer NewServer(FakeHandler h, string secret, TimeSpan ping, TimeSpan dead)
	{
		TradeBridgeServer s = new TradeBridgeServer(new TradeBridgeServerOptions
		{
			Secret = secret,
			Handler = h,
			PingAfter = ping,
			DeadAfter = dead,
			HelloTimeout = TimeSpan.FromMilliseconds(500),
		});
		h.Server = s;
		s.Start();
		return s;
	}

	private static string Hello(string secret, int version)
	{
		return "{\"type\":\"hello\",\"protocolVersion\":" + version + ",\"secret\":\"" + secret + "\",\"client\":\"selftest\"}";
	}

	private static void Refused(int port, string line, string code)
	{
		using (Client c = new Client(port))
		{
			c.Send(line);
			Dictionary<string, object> m = c.Next();
			Equal("refused", m == null ? null : m["type"], "refused for " + code);
			Equal(code, m == null ? null : m["code"], "refusal code");
			Check(c.Ends(), "refused connection closed (" + code + ")");
		}
	}

	private static void Server()
	{
		string secret = TradeBridgeSecrets.NewSecret();
		FakeHandler h = new FakeHandler();
		TradeBridgeServer s = NewServer(h, secret, TimeSpan.FromSeconds(30), TimeSpan.FromSeconds(30));
		try
		{
			Check(s.Port > 0, "listening on a port");
			Refused(s.Port, Hello("wrong", 1), "bad_secret");
			Refused(s.Port, "{\"type\":\"request\",\"id\":1,\"method\":\"snapshot\"}", "bad_hello");
			Refused(s.Port, "not json", "bad_hello");
			Refused(s.Port, Hello(secret, 0), "version_unsupported");

			using (Client c = new Client(s.Port))
			{
				c.Send(Hello(secret, 3));
				Dictionary<string, object> w = c.Next();
				Equal("welcome", w["type"], "welcome");
				Equal("1", w["protocolVersion"].ToString(), "negotiated version is the lower");
				Equal(s.SessionId, w["sessionId"], "session id");
				Equal("1.0.0", w["addonVersion"], "add-on version");
				Equal("8.1.4.1", w["platformVersion"], "platform version");
				Check(SpinUntil(delegate { return h.Connected == 1; }), "AgentConnected called");

				Refused(s.Port, Hello(secret, 1), "busy");

				c.Send("{\"type\":\"request\",\"id\":1,\"method\":\"snapshot\"}");
				Dictionary<string, object> r = c.Next();
				Equal("reply", r["type"], "snapshot reply");
				Equal("1", r["id"].ToString(), "reply id");
				Equal("0", ((Dictionary<string, object>)r["result"])["seq"].ToString(), "snapshot seq");

				c.Send("{\"type\":\"request\",\"id\":2,\"method\":\"submitOrder\",\"params\":{\"orderId\":\"a1b2c3\"},\"timeoutMs\":10000}");
				Dictionary<string, object> e = c.Next();
				Equal("event", e["type"], "event before the reply");
				Equal("1", e["seq"].ToString(), "first event is seq 1");
				Equal("order", e["kind"], "event kind");
				r = c.Next();
				Equal("reply", r["type"], "reply after the event");
				Equal("2", r["id"].ToString(), "reply id 2");

				c.Send("{\"type\":\"request\",\"id\":3,\"method\":\"nope\"}");
				r = c.Next();
				Equal("unknown_method", ((Dictionary<string, object>)r["error"])["code"], "unknown method");

				c.Send("{\"type\":\"request\",\"id\":4,\"method\":\"boom\"}");
				string raw = c.RawLine();
				Check(raw.IndexOf("\"internal\"", StringComparison.Ordinal) > 0, "a throwing handler answers internal");
				Check(raw.IndexOf("secret detail", StringComparison.Ordinal) < 0, "internal errors hide details");

				c.Send("{\"type\":\"request\",\"id\":5,\"method\":\"snapshot\",\"params\":[1]}");
				r = c.Next();
				Equal("bad_request", ((Dictionary<string, object>)r["error"])["code"], "params not an object");

				c.Send("{\"type\":\"mystery\",\"x\":1}");
				c.Send("garbage that is not json");
				c.Send("{\"type\":\"ping\",\"id\":9}");
				Dictionary<string, object> pong = c.Next();
				Equal("pong", pong["type"], "pong after ignored lines");
				Equal("9", pong["id"].ToString(), "pong id");

				s.Publish("account", delegate (TradeBridgeJsonWriter x) { x.BeginObject().EndObject(); });
				e = c.Next();
				Equal("2", e["seq"].ToString(), "events numbered in order");
				Equal(2UL, s.CurrentSeq, "current seq");

				s.Close(TradeBridgeProtocol.ByeAddonStopping);
				Dictionary<string, object> bye = c.Next();
				Equal("bye", bye == null ? null : bye["type"], "bye on close");
				Equal("addon_stopping", bye == null ? null : bye["reason"], "bye reason");
				Check(c.Ends(), "connection closed after bye");
			}
			Check(SpinUntil(delegate { return h.Disconnected == 1; }), "AgentDisconnected called");
			bool refusedAfterClose = false;
			try
			{
				using (Client x = new Client(s.Port)) { x.Send(Hello(secret, 1)); refusedAfterClose = x.Ends(); }
			}
			catch (SocketException)
			{
				refusedAfterClose = true;
			}
			Check(refusedAfterClose, "no service after close");
		}
		finally
		{
			s.Close(null);
		}
	}

	private static void ServerTiming()
	{
		string secret = TradeBridgeSecrets.NewSecret();
		FakeHandler h = new FakeHandler();
		TradeBridgeServer s = NewServer(h, secret, TimeSpan.FromMilliseconds(200), TimeSpan.FromMilliseconds(800));
		try
		{
			// A silent connection is closed after the hello timeout.
			using (Client c = new Client(s.Port))
				Check(c.Ends(), "silent connection closed");

			// The server pings an idle agent.
			using (Client c = new Client(s.Port))
			{
				c.Send(Hello(secret, 1));
				Equal("welcome", c.Next()["type"], "welcome");
				string line = c.RawLine();
				Check(line != null && line.StartsWith("{\"type\":\"ping\",\"id\":", StringComparison.Ordinal), "ping after idle: " + line);
				// An agent that sends nothing is dead after DeadAfter: the server closes it.
				Check(c.Ends(), "dead agent closed");
			}
			Check(SpinUntil(delegate { return !s.HasAgent; }), "dead agent forgotten");

			// A new agent is accepted once the dead one is gone.
			using (Client c = new Client(s.Port))
			{
				c.Send(Hello(secret, 1));
				Equal("welcome", c.Next()["type"], "next agent welcomed");
			}
		}
		finally
		{
			s.Close(null);
		}
	}

	private static bool SpinUntil(Func<bool> cond)
	{
		return SpinWait.SpinUntil(cond, WaitTimeout);
	}
}
