// TradeBridge NinjaScript add-on: the wire rules of the add-on protocol
// (docs/ninjatrader-protocol.md), without anything of NinjaTrader: constants,
// the order-name encoding, line framing, secrets, session ids, instrument
// names and times. The Go twin of this file is agent/bridge/ninjatrader/ntwire.
//
// This file uses only the .NET base library: the self-test compiles it
// outside NinjaTrader.

using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Security.Cryptography;
using System.Text;

namespace NinjaTrader.NinjaScript.AddOns
{
	/// <summary>Constants of the add-on protocol, version 1.</summary>
	public static class TradeBridgeProtocol
	{
		/// <summary>The highest protocol version the add-on speaks.</summary>
		public const int Version = 1;

		/// <summary>The add-on's own version, sent in welcome and in the discovery file.</summary>
		public const string AddonVersion = "1.0.0";

		/// <summary>The longest line either side accepts, newline excluded.</summary>
		public const int MaxLine = 16 << 20;

		public static readonly TimeSpan HelloTimeout = TimeSpan.FromSeconds(5);
		public static readonly TimeSpan PingAfter = TimeSpan.FromSeconds(5);
		public static readonly TimeSpan DeadAfter = TimeSpan.FromSeconds(15);

		public const string TypeHello = "hello";
		public const string TypeWelcome = "welcome";
		public const string TypeRefused = "refused";
		public const string TypeRequest = "request";
		public const string TypeReply = "reply";
		public const string TypeEvent = "event";
		public const string TypePing = "ping";
		public const string TypePong = "pong";
		public const string TypeBye = "bye";

		public const string RefusedBadSecret = "bad_secret";
		public const string RefusedVersionUnsupported = "version_unsupported";
		public const string RefusedBusy = "busy";
		public const string RefusedBadHello = "bad_hello";

		public const string ByePlatformClosing = "platform_closing";
		public const string ByeAddonStopping = "addon_stopping";

		public const string CodeBadRequest = "bad_request";
		public const string CodeUnknownMethod = "unknown_method";
		public const string CodeAccountNotFound = "account_not_found";
		public const string CodeOrderNotFound = "order_not_found";
		public const string CodeInstrumentUnknown = "instrument_unknown";
		public const string CodeOrderRejected = "order_rejected";
		public const string CodeTemplateNotFound = "template_not_found";
		public const string CodeStrategyNotFound = "strategy_not_found";
		public const string CodeStrategyClassUnknown = "strategy_class_unknown";
		public const string CodeStrategyTerminal = "strategy_terminal";
		public const string CodeNotConnected = "not_connected";
		public const string CodeInternal = "internal";

		public const string KindOrder = "order";
		public const string KindExecution = "execution";
		public const string KindPosition = "position";
		public const string KindAccount = "account";
		public const string KindConnection = "connection";
		public const string KindQuote = "quote";
		public const string KindBar = "bar";
		public const string KindStrategy = "strategy";

		/// <summary>The discovery file's name in its folder.</summary>
		public const string DiscoveryFileName = "ninjatrader-addon.json";
	}

	/// <summary>A reply's error: a code of the protocol and a fixed sentence that never repeats the request.</summary>
	public sealed class TradeBridgeError : Exception
	{
		public TradeBridgeError(string code, string message) : base(message)
		{
			Code = code;
		}

		public string Code { get; private set; }

		// Set for instrument_unknown only.
		public string Cause { get; set; }
		public string Root { get; set; }
		public string Months { get; set; }
		public string Front { get; set; }

		public void WriteTo(TradeBridgeJsonWriter w)
		{
			w.BeginObject();
			w.Prop("code", Code);
			w.PropIf("message", Message);
			w.PropIf("cause", Cause);
			w.PropIf("root", Root);
			w.PropIf("months", Months);
			w.PropIf("front", Front);
			w.EndObject();
		}

		public static TradeBridgeError BadRequest(string message) { return new TradeBridgeError(TradeBridgeProtocol.CodeBadRequest, message); }
		public static TradeBridgeError Internal(string message) { return new TradeBridgeError(TradeBridgeProtocol.CodeInternal, message); }
	}

	/// <summary>
	/// The NinjaTrader order name that carries the agent's order id:
	/// "name|orderId", or "name|orderId|tag" with a strategy tag.
	/// </summary>
	public static class TradeBridgeOrderName
	{
		public const char Separator = '|';

		/// <summary>The longest order id the agent gives an order.</summary>
		public const int MaxOrderId = 64;

		/// <summary>True for 1 to 64 characters of [A-Za-z0-9._:-].</summary>
		public static bool ValidOrderId(string id)
		{
			if (string.IsNullOrEmpty(id) || id.Length > MaxOrderId)
				return false;
			foreach (char c in id)
			{
				bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
					c == '.' || c == '_' || c == ':' || c == '-';
				if (!ok)
					return false;
			}
			return true;
		}

		/// <summary>Encodes the three parts. None may contain the separator.</summary>
		public static string Make(string name, string orderId, string tag)
		{
			string s = (name ?? "") + Separator + orderId;
			if (!string.IsNullOrEmpty(tag))
				s += Separator + tag;
			return s;
		}

		/// <summary>
		/// Splits a name made by Make. False for a name the agent did not make
		/// (an order placed by hand, the brackets of an ATM strategy).
		/// </summary>
		public static bool TryParse(string s, out string name, out string orderId, out string tag)
		{
			name = orderId = tag = null;
			if (s == null)
				return false;
			string[] parts = s.Split(Separator);
			if (parts.Length < 2 || parts.Length > 3 || !ValidOrderId(parts[1]))
				return false;
			if (parts.Length == 3 && parts[2].Length == 0)
				return false;
			name = parts[0];
			orderId = parts[1];
			tag = parts.Length == 3 ? parts[2] : "";
			return true;
		}
	}

	/// <summary>A line longer than the protocol allows; the stream cannot be read further.</summary>
	public sealed class TradeBridgeLineTooLongException : IOException
	{
		public TradeBridgeLineTooLongException() : base("line too long") { }
	}

	/// <summary>
	/// Reads lines ended by '\n' from a stream (a '\r' before it is dropped),
	/// each at most a given number of bytes, decoded as strict UTF-8.
	/// </summary>
	public sealed class TradeBridgeLineReader
	{
		private static readonly UTF8Encoding Strict = new UTF8Encoding(false, true);

		private readonly Stream stream;
		private readonly int max;
		private readonly byte[] buf = new byte[64 * 1024];
		private int start, end;
		private MemoryStream pending;

		public TradeBridgeLineReader(Stream stream, int maxLine)
		{
			this.stream = stream;
			max = maxLine;
		}

		/// <summary>
		/// The next line without its ending, or null at the end of the stream.
		/// A stream that ends inside a line is an EndOfStreamException; a line
		/// over the limit a TradeBridgeLineTooLongException; bytes that are not
		/// UTF-8 a DecoderFallbackException (the next call reads the next line).
		/// </summary>
		public string ReadLine()
		{
			while (true)
			{
				int nl = Array.IndexOf(buf, (byte)'\n', start, end - start);
				if (nl >= 0)
				{
					int len = nl - start;
					byte[] line;
					if (pending == null)
					{
						if (len > max + 1)
							throw new TradeBridgeLineTooLongException();
						line = new byte[len];
						Buffer.BlockCopy(buf, start, line, 0, len);
					}
					else
					{
						if (pending.Length + len > max + 1)
							throw new TradeBridgeLineTooLongException();
						pending.Write(buf, start, len);
						line = pending.ToArray();
						pending = null;
					}
					start = nl + 1;
					int n = line.Length;
					if (n > 0 && line[n - 1] == '\r')
						n--;
					if (n > max)
						throw new TradeBridgeLineTooLongException();
					return Strict.GetString(line, 0, n);
				}
				// No newline in the buffer: keep what there is and read more.
				if (end > start)
				{
					if (pending == null)
						pending = new MemoryStream();
					if (pending.Length + (end - start) > max + 1)
						throw new TradeBridgeLineTooLongException();
					pending.Write(buf, start, end - start);
				}
				start = end = 0;
				int got = stream.Read(buf, 0, buf.Length);
				if (got <= 0)
				{
					if (pending != null && pending.Length > 0)
						throw new EndOfStreamException("stream ended inside a line");
					return null;
				}
				end = got;
			}
		}
	}

	/// <summary>Secrets and ids made from the system's cryptographic random numbers.</summary>
	public static class TradeBridgeSecrets
	{
		/// <summary>32 random bytes in unpadded base64url: 43 characters.</summary>
		public static string NewSecret()
		{
			byte[] b = new byte[32];
			using (RNGCryptoServiceProvider rng = new RNGCryptoServiceProvider())
				rng.GetBytes(b);
			return Base64Url(b);
		}

		/// <summary>A session id: 16 lower-case hexadecimal characters from 8 random bytes.</summary>
		public static string NewSessionId()
		{
			byte[] b = new byte[8];
			using (RNGCryptoServiceProvider rng = new RNGCryptoServiceProvider())
				rng.GetBytes(b);
			StringBuilder sb = new StringBuilder(16);
			foreach (byte x in b)
				sb.Append(x.ToString("x2", CultureInfo.InvariantCulture));
			return sb.ToString();
		}

		public static string Base64Url(byte[] b)
		{
			return Convert.ToBase64String(b).TrimEnd('=').Replace('+', '-').Replace('/', '_');
		}

		/// <summary>Compares two secrets in time that depends on their lengths only.</summary>
		public static bool ConstantTimeEquals(string a, string b)
		{
			byte[] x = Encoding.UTF8.GetBytes(a ?? "");
			byte[] y = Encoding.UTF8.GetBytes(b ?? "");
			int diff = x.Length ^ y.Length;
			int n = Math.Max(x.Length, y.Length);
			for (int i = 0; i < n; i++)
			{
				byte p = i < x.Length ? x[i] : (byte)0;
				byte q = i < y.Length ? y[i] : (byte)0;
				diff |= p ^ q;
			}
			return diff == 0;
		}
	}

	/// <summary>How an instrument name was written.</summary>
	public enum TradeBridgeInstrumentForm
	{
		Malformed,
		/// <summary>A root alone, "ES": its front month.</summary>
		Root,
		/// <summary>A contract, "ES 12-26".</summary>
		Contract,
		/// <summary>A month code, "ESZ26" or "ESZ6" (the agent sends contracts instead).</summary>
		MonthCode,
	}

	/// <summary>An instrument name parsed by the grammar of protocol.ParseInstrument.</summary>
	public sealed class TradeBridgeInstrumentName
	{
		public const string MonthCodes = "FGHJKMNQUVXZ";

		public TradeBridgeInstrumentForm Form { get; private set; }
		public string Root { get; private set; }
		/// <summary>1 to 12; 0 for a root.</summary>
		public int Month { get; private set; }
		/// <summary>The year as written: two digits for a contract.</summary>
		public int Year { get; private set; }

		public static bool ValidRoot(string s)
		{
			if (string.IsNullOrEmpty(s) || s.Length > 6)
				return false;
			foreach (char c in s)
				if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
					return false;
			return true;
		}

		/// <summary>"ES 12-26" for root ES, December 2026.</summary>
		public static string ContractName(string root, int month, int year)
		{
			return root + " " + month.ToString("00", CultureInfo.InvariantCulture) + "-" +
				(((year % 100) + 100) % 100).ToString("00", CultureInfo.InvariantCulture);
		}

		public static TradeBridgeInstrumentName Parse(string s)
		{
			TradeBridgeInstrumentName bad = new TradeBridgeInstrumentName { Form = TradeBridgeInstrumentForm.Malformed };
			if (s == null)
				return bad;
			s = s.Trim();
			if (s.Length == 0 || s.Length > 12)
				return bad;
			int sp = s.IndexOf(' ');
			if (sp >= 0)
			{
				string root = s.Substring(0, sp), date = s.Substring(sp + 1);
				if (!ValidRoot(root) || date.Length != 5 || date[2] != '-' || !IsDigit(date[0]) || !IsDigit(date[1]) ||
					!IsDigit(date[3]) || !IsDigit(date[4]))
					return bad;
				int m = (date[0] - '0') * 10 + (date[1] - '0');
				if (m < 1 || m > 12)
					return bad;
				return new TradeBridgeInstrumentName
				{
					Form = TradeBridgeInstrumentForm.Contract,
					Root = root.ToUpperInvariant(),
					Month = m,
					Year = (date[3] - '0') * 10 + (date[4] - '0'),
				};
			}
			int i = s.Length;
			while (i > 0 && IsDigit(s[i - 1]))
				i--;
			int digits = s.Length - i;
			if (digits >= 1 && digits <= 2 && i >= 2)
			{
				int month = MonthCodes.IndexOf(char.ToUpperInvariant(s[i - 1])) + 1;
				string root = s.Substring(0, i - 1);
				if (month > 0 && ValidRoot(root))
					return new TradeBridgeInstrumentName
					{
						Form = TradeBridgeInstrumentForm.MonthCode,
						Root = root.ToUpperInvariant(),
						Month = month,
						Year = int.Parse(s.Substring(i), CultureInfo.InvariantCulture),
					};
			}
			if (ValidRoot(s))
				return new TradeBridgeInstrumentName { Form = TradeBridgeInstrumentForm.Root, Root = s.ToUpperInvariant() };
			return bad;
		}

		private static bool IsDigit(char c) { return c >= '0' && c <= '9'; }
	}

	/// <summary>Times as the protocol writes them: RFC 3339 UTC and Unix milliseconds.</summary>
	public static class TradeBridgeTime
	{
		private static readonly DateTime UnixEpoch = new DateTime(1970, 1, 1, 0, 0, 0, DateTimeKind.Utc);

		/// <summary>"2026-11-25T14:02:11Z", with milliseconds when there are any.</summary>
		public static string Format(DateTime utc)
		{
			if (utc.Kind == DateTimeKind.Local)
				utc = utc.ToUniversalTime();
			string f = utc.Millisecond == 0 ? "yyyy-MM-dd'T'HH:mm:ss'Z'" : "yyyy-MM-dd'T'HH:mm:ss.fff'Z'";
			return utc.ToString(f, CultureInfo.InvariantCulture);
		}

		public static long Epoch(DateTime utc)
		{
			if (utc.Kind == DateTimeKind.Local)
				utc = utc.ToUniversalTime();
			return (utc.Ticks - UnixEpoch.Ticks) / TimeSpan.TicksPerMillisecond;
		}

		/// <summary>Parses an RFC 3339 time with a zone ("Z" or an offset) into UTC.</summary>
		public static bool TryParse(string s, out DateTime utc)
		{
			utc = DateTime.MinValue;
			if (string.IsNullOrEmpty(s) || s.Length < 20 || (s[10] != 'T' && s[10] != 't'))
				return false;
			char last = s[s.Length - 1];
			bool zoned = last == 'Z' || last == 'z' || (s.Length >= 6 && (s[s.Length - 6] == '+' || s[s.Length - 6] == '-'));
			if (!zoned)
				return false;
			DateTimeOffset dto;
			if (!DateTimeOffset.TryParse(s.Replace('t', 'T').Replace('z', 'Z'), CultureInfo.InvariantCulture,
				DateTimeStyles.AdjustToUniversal, out dto))
				return false;
			utc = dto.UtcDateTime;
			return true;
		}
	}

	/// <summary>Typed reads of a request's params, with the protocol's bad_request errors.</summary>
	public sealed class TradeBridgeParams
	{
		private readonly Dictionary<string, object> p;

		public TradeBridgeParams(Dictionary<string, object> p)
		{
			this.p = p ?? new Dictionary<string, object>(StringComparer.Ordinal);
		}

		public bool Has(string name)
		{
			object v;
			return p.TryGetValue(name, out v) && v != null;
		}

		/// <summary>A string member; null when absent. A member of another type is bad_request.</summary>
		public string String(string name)
		{
			object v;
			if (!p.TryGetValue(name, out v) || v == null)
				return null;
			string s = v as string;
			if (s == null)
				throw TradeBridgeError.BadRequest("a parameter has the wrong type");
			return s;
		}

		public string RequiredString(string name)
		{
			string s = String(name);
			if (string.IsNullOrEmpty(s))
				throw TradeBridgeError.BadRequest("a required parameter is missing");
			return s;
		}

		/// <summary>A whole number member; def when absent.</summary>
		public long Int(string name, long def)
		{
			object v;
			if (!p.TryGetValue(name, out v) || v == null)
				return def;
			TradeBridgeJsonNumber n = v as TradeBridgeJsonNumber;
			long l;
			if (n == null || !n.TryGetInt64(out l))
				throw TradeBridgeError.BadRequest("a parameter has the wrong type");
			return l;
		}

		/// <summary>A number member; def when absent.</summary>
		public double Number(string name, double def)
		{
			object v;
			if (!p.TryGetValue(name, out v) || v == null)
				return def;
			TradeBridgeJsonNumber n = v as TradeBridgeJsonNumber;
			if (n == null)
				throw TradeBridgeError.BadRequest("a parameter has the wrong type");
			double d = n.ToDouble();
			if (double.IsNaN(d) || double.IsInfinity(d))
				throw TradeBridgeError.BadRequest("a parameter is out of range");
			return d;
		}

		public List<string> Strings(string name)
		{
			object v;
			if (!p.TryGetValue(name, out v) || v == null)
				throw TradeBridgeError.BadRequest("a required parameter is missing");
			List<object> list = v as List<object>;
			if (list == null)
				throw TradeBridgeError.BadRequest("a parameter has the wrong type");
			List<string> r = new List<string>(list.Count);
			foreach (object o in list)
			{
				string s = o as string;
				if (string.IsNullOrEmpty(s))
					throw TradeBridgeError.BadRequest("a parameter has the wrong type");
				r.Add(s);
			}
			return r;
		}

		public Dictionary<string, object> Object(string name)
		{
			object v;
			if (!p.TryGetValue(name, out v) || v == null)
				return null;
			Dictionary<string, object> d = v as Dictionary<string, object>;
			if (d == null)
				throw TradeBridgeError.BadRequest("a parameter has the wrong type");
			return d;
		}
	}
}
